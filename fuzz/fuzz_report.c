// SPDX-License-Identifier: MIT
/*
 * The guest's report as the VMM reads it. The input is what the guest
 * writes to COM1, sent byte by byte through vmm_devices_pio(); then every
 * key cmd_run.c asks for goes through vmm_report_u64(), on the report
 * kept and on the input itself.
 *
 * The oracle reads the same text with json-c on its own: a JSON object
 * as json-c's strict tokener takes it (valid UTF-8, nothing after it),
 * under VMM_LINE_MAX bytes. The report kept is the first whole
 * "ZVMM-REPORT " line that is one; a key is one of its top-level members
 * (the last of duplicates, as json-c keeps them); a non-negative integer
 * is returned exactly, anything else is -EINVAL. json-c keeps an integer
 * above UINT64_MAX as UINT64_MAX, so there the oracle accepts -ERANGE
 * only from a text with a digit run that large; and it builds a second
 * document of its own with one member that overflows and one that is
 * exactly UINT64_MAX, where it knows which is which.
 */
#include <errno.h>
#include <json-c/json.h>

#include "../vmm/devices.h"
#include "fuzz.h"

#define PREFIX "ZVMM-REPORT "

static const char *const keys[] = { "vcpus",	      "stride",
				    "reserved_bytes", "touched_bytes",
				    "verified_bytes", "nonzero_bytes",
				    "tsc_cycles",     "marks_written",
				    "marks_lost",     "foreign_words" };
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

/* @s (@n bytes) as one JSON object, or NULL: the oracle's own reading. */
static json_object *oracle_parse(const char *s, size_t n)
{
	json_tokener *tok;
	json_object *o;

	if (n >= VMM_LINE_MAX)
		return NULL;
	tok = json_tokener_new();
	if (!tok)
		abort();
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
					    JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, s, (int)n);
	if (o && (json_tokener_get_parse_end(tok) != n ||
		  !json_object_is_type(o, json_type_object))) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	return o;
}

/* Whether @s has a run of digits whose value is above UINT64_MAX. */
static bool has_huge_digits(const char *s)
{
	unsigned __int128 n = 0;
	bool huge = false;

	for (; *s; s++) {
		if (*s < '0' || *s > '9') {
			n = 0;
			continue;
		}
		n = n * 10 + (unsigned int)(*s - '0');
		if (n > UINT64_MAX) {
			huge = true;
			n = (unsigned __int128)UINT64_MAX + 1;
		}
	}
	return huge;
}

/*
 * vmm_report_u64(@s, @key) against @root, the oracle's reading of @s
 * (NULL: not a JSON object). @clamped: a UINT64_MAX in @root may stand
 * for a larger number in @s.
 */
static void check_key(const char *s, json_object *root, const char *key,
		      bool clamped)
{
	json_object *o;
	uint64_t v = 0, want;
	int ret = vmm_report_u64(s, key, &v);

	if (!root) {
		fuzz_assert(ret == -EINVAL, "%s: not an object, got %d/%llu",
			    key, ret, (unsigned long long)v);
		return;
	}
	if (!json_object_object_get_ex(root, key, &o)) {
		fuzz_assert(ret == -ENOENT, "%s: absent, got %d/%llu", key, ret,
			    (unsigned long long)v);
		return;
	}
	if (!json_object_is_type(o, json_type_int) ||
	    json_object_get_int64(o) < 0) {
		fuzz_assert(ret == -EINVAL, "%s: %s is no count, got %d/%llu",
			    key, json_object_to_json_string(o), ret,
			    (unsigned long long)v);
		return;
	}
	want = json_object_get_uint64(o);
	if (want == UINT64_MAX && clamped && ret == -ERANGE)
		return;
	fuzz_assert(!ret && v == want, "%s: got %d/%llu, want %llu", key, ret,
		    (unsigned long long)v, (unsigned long long)want);
}

static void check_keys(const char *s, json_object *root)
{
	bool clamped = has_huge_digits(s);

	for (size_t i = 0; i < NKEYS; i++)
		check_key(s, root, keys[i], clamped);
}

/*
 * @root's members again, with keys[@over] set to a literal above
 * UINT64_MAX (json-c writes a double_s's text as it is) and keys[@max]
 * to UINT64_MAX itself, written by json-c: the one must read -ERANGE,
 * the other exactly, wherever they stand, and the rest as @root says.
 */
static void check_built(json_object *root, const uint8_t *data, size_t size)
{
	static const char *const huge[] = { "18446744073709551616",
					    "99999999999999999999",
					    "184467440737095516150" };
	uint8_t h = size ? data[0] ^ data[size - 1] : 0;
	size_t over = h % NKEYS, max = (over + 1 + h / NKEYS % 3) % NKEYS;
	json_object *doc = json_object_new_object(), *back;
	struct json_object_iter it;
	const char *t;
	uint64_t v = 0;
	int ret;

	if (!doc)
		abort();
	json_object_object_foreachC(root, it)
	{
		json_object_object_add(doc, it.key, json_object_get(it.val));
	}
	if (h & 0x80)
		json_object_object_add(doc, keys[max],
				       json_object_new_uint64(UINT64_MAX));
	json_object_object_add(doc, keys[over],
			       json_object_new_double_s(0, huge[size % 3]));
	if (!(h & 0x80))
		json_object_object_add(doc, keys[max],
				       json_object_new_uint64(UINT64_MAX));
	t = json_object_to_json_string_ext(
		doc, h & 1 ? JSON_C_TO_STRING_PLAIN : JSON_C_TO_STRING_SPACED);
	if (!t)
		abort();
	back = oracle_parse(t, strlen(t));
	if (strlen(t) < VMM_LINE_MAX) {
		fuzz_assert(back, "json-c's own output does not parse: %s", t);
		ret = vmm_report_u64(t, keys[over], &v);
		fuzz_assert(ret == -ERANGE,
			    "%s: %s overflows, got %d/%llu in %s", keys[over],
			    huge[size % 3], ret, (unsigned long long)v, t);
		/* The only number above UINT64_MAX in @t is keys[over]'s. */
		for (size_t i = 0; i < NKEYS; i++)
			if (i != over)
				check_key(t, back, keys[i], false);
	}
	json_object_put(back);
	json_object_put(doc);
}

/*
 * The report the device must keep: the first line of @data (ended by a
 * newline) that fits the line buffer, starts with PREFIX and, up to a NUL
 * and without trailing spaces and CRs, is a JSON object. NULL if none.
 */
static char *expected_report(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *nl;

	if (!size)
		return NULL;
	while ((nl = memchr(p, '\n', size - (size_t)(p - data)))) {
		size_t len = (size_t)(nl - p), n;
		char *line = fuzz_cstr(p, len);
		const char *json = line + strlen(PREFIX);
		json_object *o;

		p = nl + 1;
		if (len >= VMM_LINE_MAX ||
		    strncmp(line, PREFIX, strlen(PREFIX))) {
			free(line);
			continue;
		}
		n = strlen(json);
		while (n && (json[n - 1] == ' ' || json[n - 1] == '\r'))
			n--;
		o = oracle_parse(json, n);
		if (o) {
			json_object_put(o);
			memmove(line, json, n);
			line[n] = '\0';
			return line;
		}
		free(line);
	}
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct vmm_vm vm;
	static FILE *null;
	struct vmm_vcpu cpu = { .vm = &vm, .fd = -1 };
	struct vmm_devices *d = malloc(sizeof(*d));
	char *s = fuzz_cstr(data, size), *want = expected_report(data, size);
	json_object *root;

	if (!null)
		null = fopen("/dev/null", "w");
	if (!d || !null)
		abort();
	vmm_devices_init(d, &vm, null);
	for (size_t i = 0; i < size; i++) {
		uint8_t b = data[i];

		vmm_devices_pio(&cpu, VMM_COM1, true, &b, 1);
	}
	fuzz_assert(d->line_len < VMM_LINE_MAX, "line_len %zu", d->line_len);
	fuzz_assert(d->have_report == !!want, "report kept: %d, want %s",
		    d->have_report, want ? want : "none");
	if (d->have_report) {
		fuzz_assert(memchr(d->report, '\0', sizeof(d->report)),
			    "report not terminated");
		fuzz_assert(!strcmp(d->report, want), "report '%s', want '%s'",
			    d->report, want);
		root = oracle_parse(d->report, strlen(d->report));
		fuzz_assert(root, "report kept is no JSON object: %s",
			    d->report);
		check_keys(d->report, root);
		check_built(root, data, size);
		json_object_put(root);
	}
	vmm_devices_fini(d);
	free(d);
	free(want);

	root = oracle_parse(s, strlen(s));
	check_keys(s, root);
	if (root)
		check_built(root, data, size);
	json_object_put(root);
	free(s);
	return 0;
}
