// SPDX-License-Identifier: MIT
/*
 * The calibration profile's parser, zero_profile_parse(), with the input
 * as the profile's text (zeroing/calibrate.c; no machine is looked at).
 *
 * A profile it takes holds what the parser promises: a version of 1 or
 * 2, one to ZERO_PROFILE_MAX_CHUNKS entries of distinct chunk sizes,
 * each with a best that is a backend, rates finite from 0.01 to 1e6 GB/s
 * and spreads from 0 to 1e6 (or none). It prints through
 * zero_profile_print() as text the parser takes again, to the same
 * profile (rates and spreads to the decimals printed), which prints as
 * the same text. And, read off the input's own lines where no INI rule
 * can make them mean anything else (a line that starts at its first
 * byte is never the continuation of a key): a text with a "version"
 * line whose value is not 1 or 2, a rate or spread line whose value is
 * a number that is not finite, or two "[chunk X]" headers of one name,
 * is refused.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>

#include "../lib/size.h"
#include "../zeroing/backend.h"
#include "../zeroing/calibrate.h"
#include "fuzz.h"

/* The values zvmm prints: %.2f rates, %.3f spreads. */
#define GBPS_ROUND 0.005
#define SPREAD_ROUND 0.0005

static char *print(const struct zero_profile *p, size_t *len)
{
	char *text = NULL;
	FILE *f = open_memstream(&text, len);

	if (!f)
		abort();
	zero_profile_print(p, f);
	if (fclose(f))
		abort();
	return text;
}

static bool close_to(double a, double b, double round)
{
	return fabs(a - b) <= round * (1 + 1e-9) + fabs(a) * 1e-12;
}

static void check_valid(const struct zero_profile *p,
			const struct zero_profile_head *h)
{
	char label[32];

	fuzz_assert(h->version == 1 || h->version == 2, "version %u",
		    h->version);
	fuzz_assert(p->nr >= 1 && p->nr <= ZERO_PROFILE_MAX_CHUNKS, "nr %u",
		    p->nr);
	fuzz_assert(memchr(h->features, '\0', sizeof(h->features)),
		    "features not terminated");
	for (unsigned int c = 0; c < p->nr; c++) {
		const struct zero_profile_entry *e = &p->e[c];

		fuzz_assert(e->chunk, "entry %u: chunk 0", c);
		size_label(e->chunk, label, sizeof(label));
		for (unsigned int k = 0; k < c; k++)
			fuzz_assert(p->e[k].chunk != e->chunk,
				    "two entries of chunk %s", label);
		fuzz_assert(e->best >= 0 &&
				    e->best < (int)zero_backend_count() &&
				    e->best < ZERO_PROFILE_MAX_BACKENDS,
			    "chunk %s: best %d", label, e->best);
		fuzz_assert(e->spread == -1 ||
				    (isfinite(e->spread) && e->spread >= 0 &&
				     e->spread <= 1e6),
			    "chunk %s: spread %g", label, e->spread);
		for (unsigned int i = 0; i < ZERO_PROFILE_MAX_BACKENDS; i++)
			fuzz_assert(e->gbps[i] == 0 || (isfinite(e->gbps[i]) &&
							e->gbps[i] >= 0.01 &&
							e->gbps[i] <= 1e6),
				    "chunk %s: rate %u %g", label, i,
				    e->gbps[i]);
	}
}

static void check_same(const struct zero_profile *a,
		       const struct zero_profile *b, const char *text)
{
	fuzz_assert(!strcmp(a->id.arch, b->id.arch) &&
			    !strcmp(a->id.cpu, b->id.cpu) &&
			    !strcmp(a->id.cpu_id, b->id.cpu_id) &&
			    !strcmp(a->id.microcode, b->id.microcode) &&
			    !strcmp(a->id.kernel, b->id.kernel) &&
			    !strcmp(a->id.backends, b->id.backends),
		    "the machine changed:\n%s", text);
	fuzz_assert(a->region == b->region && a->llc == b->llc &&
			    a->reps == b->reps && a->nr == b->nr,
		    "region, llc, reps or entries changed:\n%s", text);
	for (unsigned int c = 0; c < a->nr; c++) {
		const struct zero_profile_entry *x = &a->e[c], *y = &b->e[c];

		fuzz_assert(x->chunk == y->chunk && x->best == y->best,
			    "entry %u changed:\n%s", c, text);
		fuzz_assert(
			(x->spread < 0 && y->spread < 0) ||
				(x->spread >= 0 && y->spread >= 0 &&
				 close_to(x->spread, y->spread, SPREAD_ROUND)),
			"entry %u: spread %g, then %g:\n%s", c, x->spread,
			y->spread, text);
		for (unsigned int i = 0; i < ZERO_PROFILE_MAX_BACKENDS; i++)
			fuzz_assert((!x->gbps[i] && !y->gbps[i]) ||
					    (x->gbps[i] && y->gbps[i] &&
					     close_to(x->gbps[i], y->gbps[i],
						      GBPS_ROUND)),
				    "entry %u: rate %u %g, then %g:\n%s", c, i,
				    x->gbps[i], y->gbps[i], text);
	}
}

/* Printed, read back, printed again: the same profile, the same text. */
static void round_trip(struct zero_profile *p, uint32_t features)
{
	struct zero_profile_head h;
	struct zero_profile q;
	size_t len, len2;
	char *text, *again, feat[128];
	int line, ret;

	p->id.features = features;
	zero_features_format(features, feat, sizeof(feat));
	text = print(p, &len);
	ret = zero_profile_parse(text, len, &q, &h, &line);
	fuzz_assert(!ret, "zvmm refuses its own profile (%d, line %d):\n%s",
		    ret, line, text);
	fuzz_assert(h.version == 2 && !strcmp(h.features, feat),
		    "version %u, features '%s':\n%s", h.version, h.features,
		    text);
	check_valid(&q, &h);
	check_same(p, &q, text);
	q.id.features = features;
	again = print(&q, &len2);
	fuzz_assert(len == len2 && !memcmp(text, again, len),
		    "printed again, another text:\n%s\n---\n%s", text, again);
	free(again);
	free(text);
}

/* The value of "key = value" as libinih gives it: no ';' comment. */
static size_t line_value(const char *v, size_t n, const char **out)
{
	size_t i;

	while (n && isspace((unsigned char)*v)) {
		v++;
		n--;
	}
	for (i = 0; i < n; i++)
		if (v[i] == ';' && i && isspace((unsigned char)v[i - 1]))
			break;
	n = i;
	while (n && isspace((unsigned char)v[n - 1]))
		n--;
	*out = v;
	return n;
}

static bool is_rate_key(const char *key, size_t n)
{
	char name[64];

	if (!n || n >= sizeof(name))
		return false;
	memcpy(name, key, n);
	name[n] = '\0';
	return !strcmp(name, "spread") || zero_backend_index(name) >= 0;
}

/* A decimal number 1 or 2, leading zeros allowed, nothing else. */
static bool version_ok(const char *v, size_t n)
{
	while (n > 1 && *v == '0') {
		v++;
		n--;
	}
	return n == 1 && (*v == '1' || *v == '2');
}

static bool not_finite(const char *v, size_t n)
{
	char num[256], *end;
	double d;

	if (!n || n >= sizeof(num))
		return false;
	memcpy(num, v, n);
	num[n] = '\0';
	d = strtod(num, &end);
	return end != num && !*end && !isfinite(d);
}

/*
 * Why the text must be refused, read off lines that start at their
 * first byte (after a first line's BOM), or NULL.
 */
static const char *must_refuse(const char *text, size_t size)
{
	static char why[160];
	char heads[64][64];
	unsigned int nr = 0;
	size_t pos = 0;
	int line = 0;

	while (pos < size) {
		const char *s = text + pos, *e, *eq, *v;
		size_t n = size - pos, klen, vlen;

		e = memchr(s, '\n', n);
		n = e ? (size_t)(e - s) : n;
		pos += n + 1;
		line++;
		e = memchr(s, '\0', n);
		n = e ? (size_t)(e - s) : n;
		if (line == 1 && n >= 3 && !memcmp(s, "\xef\xbb\xbf", 3)) {
			s += 3;
			n -= 3;
		}
		if (!n || isspace((unsigned char)*s))
			continue;
		if (*s == '[') {
			const char *close = memchr(s, ']', n);
			size_t hl = close ? (size_t)(close - s) : 0;

			if (!close || hl >= sizeof(heads[0]) || hl < 7 ||
			    memcmp(s + 1, "chunk ", 6))
				continue;
			for (unsigned int i = 0; i < nr; i++)
				if (!memcmp(heads[i], s, hl) && !heads[i][hl]) {
					snprintf(why, sizeof(why),
						 "line %d: a second %.*s]",
						 line, (int)hl, s);
					return why;
				}
			if (nr < 64) {
				memcpy(heads[nr], s, hl);
				heads[nr++][hl] = '\0';
			}
			continue;
		}
		eq = memchr(s, '=', n);
		v = memchr(s, ':', n);
		if (!eq || (v && v < eq))
			eq = v;
		if (!eq)
			continue;
		for (klen = (size_t)(eq - s);
		     klen && isspace((unsigned char)s[klen - 1]); klen--)
			;
		vlen = line_value(eq + 1, n - (size_t)(eq + 1 - s), &v);
		if (klen == 7 && !memcmp(s, "version", 7) &&
		    !version_ok(v, vlen)) {
			snprintf(why, sizeof(why), "line %d: version '%.*s'",
				 line, (int)(vlen < 40 ? vlen : 40), v);
			return why;
		}
		if (is_rate_key(s, klen) && not_finite(v, vlen)) {
			snprintf(why, sizeof(why), "line %d: %.*s = %.*s", line,
				 (int)klen, s, (int)(vlen < 40 ? vlen : 40), v);
			return why;
		}
	}
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct zero_profile_head h;
	struct zero_profile p;
	const char *why;
	uint32_t features = 0;
	int line = -1, ret;

	ret = zero_profile_parse((const char *)data, size, &p, &h, &line);
	fuzz_assert(!ret || ret == -EINVAL, "parse %d", ret);
	if (ret) {
		fuzz_assert(line >= 0, "line %d", line);
		return 0;
	}
	fuzz_assert(!line, "taken, line %d", line);
	why = must_refuse((const char *)data, size);
	fuzz_assert(!why, "taken: %s", why);
	check_valid(&p, &h);
	/* Any features: the text written is what the mask says. */
	for (size_t i = 0; i < size; i++)
		features = features * 31 + data[i];
	round_trip(&p, features);
	return 0;
}
