// SPDX-License-Identifier: MIT
#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/log.h"
#include "../lib/clock.h"
#include "devices.h"

#define REPORT_PREFIX "ZVMM-REPORT "
#define TOUCH_START "ZVMM-TOUCH-START"
#define UART_LSR_THRE_TEMT 0x60

void vmm_devices_init(struct vmm_devices *d, struct vmm_vm *vm, FILE *serial)
{
	memset(d, 0, sizeof(*d));
	d->vm = vm;
	d->serial = serial;
	d->first_other_port = -1;
	pthread_mutex_init(&d->lock, NULL);
	vm->io.pio = vmm_devices_pio;
	vm->io.arg = d;
}

void vmm_devices_fini(struct vmm_devices *d)
{
	if (d->line_len)
		fflush(d->serial);
	pthread_mutex_destroy(&d->lock);
}

/*
 * The report is read by json-c's tokener, strict (no comments, trailing
 * commas, leading zeros or bytes after the value) and checking UTF-8,
 * nested at most JSON_TOKENER_DEFAULT_DEPTH (32) deep.
 */
#define REPORT_JSON_FLAGS (JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8)

/*
 * @s (@n bytes, no NUL needed) as one JSON object: 0 with *root (the
 * caller puts it), -EINVAL when it is anything else, -ENOMEM.
 */
static int report_parse(const char *s, size_t n, json_object **root)
{
	json_tokener *tok = json_tokener_new();
	json_object *o;

	*root = NULL;
	if (!tok)
		return -ENOMEM;
	json_tokener_set_flags(tok, REPORT_JSON_FLAGS);
	o = json_tokener_parse_ex(tok, s, (int)n);
	if (o && (json_tokener_get_parse_end(tok) != n ||
		  !json_object_is_type(o, json_type_object))) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	*root = o;
	return o ? 0 : -EINVAL;
}

/*
 * The guest's report: the first line "ZVMM-REPORT {...}" that fits the
 * line buffer whole. A longer one, one that is not a JSON object (as
 * report_parse() reads it), or a second report is refused with a
 * warning: whatever the guest sends, the report is bounded
 * (VMM_LINE_MAX) and the first good one stands. It is kept as text, and
 * vmm_report_u64() parses it again for each key it is asked: a dozen
 * parses of at most 4 KiB once per run, and the text is all there is to
 * own.
 */
static void report_line_locked(struct vmm_devices *d, const char *json)
{
	size_t n = strlen(json);
	json_object *root;
	int ret;

	while (n && (json[n - 1] == ' ' || json[n - 1] == '\r'))
		n--;
	if (d->have_report) {
		if (!d->extra_reports++)
			pr_warn("guest sent another report line: the first one is kept");
		return;
	}
	if (d->line_over) {
		pr_warn("guest report line is longer than %d bytes: ignored",
			VMM_LINE_MAX - 1);
		return;
	}
	ret = report_parse(json, n, &root);
	json_object_put(root);
	if (ret == -ENOMEM) {
		pr_warn("no memory to parse the guest report: ignored");
	} else if (ret) {
		pr_warn("guest report is not a JSON object: ignored");
	} else {
		d->report_time = clock_now();
		snprintf(d->report, sizeof(d->report), "%.*s", (int)n, json);
		d->have_report = true;
	}
}

static void end_line_locked(struct vmm_devices *d)
{
	d->line[d->line_len] = '\0';
	if (!strncmp(d->line, TOUCH_START, strlen(TOUCH_START)))
		d->touch_start = clock_now();
	else if (!strncmp(d->line, REPORT_PREFIX, strlen(REPORT_PREFIX)))
		report_line_locked(d, d->line + strlen(REPORT_PREFIX));
	d->line_len = 0;
	d->line_over = false;
}

static void serial_out(struct vmm_devices *d, uint8_t c)
{
	pthread_mutex_lock(&d->lock);
	fputc(c, d->serial);
	if (c == '\n') {
		fflush(d->serial);
		end_line_locked(d);
	} else if (d->line_len < VMM_LINE_MAX - 1) {
		d->line[d->line_len++] = (char)c;
	} else {
		d->line_over = true;
	}
	pthread_mutex_unlock(&d->lock);
}

void vmm_devices_pio(struct vmm_vcpu *c, uint16_t port, bool out, uint8_t *data,
		     unsigned int size)
{
	struct vmm_devices *d = c->vm->io.arg;
	uint32_t v = 0;

	if (port == VMM_COM1 && out) {
		serial_out(d, data[0]);
		return;
	}
	if (port >= VMM_COM1 && port < VMM_COM1 + 8) {
		/* Reads: transmitter empty, nothing received. */
		if (!out)
			data[0] = port == VMM_COM1 + 5 ? UART_LSR_THRE_TEMT : 0;
		return;
	}
	if (port == VMM_EXIT_PORT && out) {
		memcpy(&v, data, size < 4 ? size : 4);
		vmm_vm_request_stop(c->vm, VMM_STOP_EXIT_PORT, (int)v, NULL);
		return;
	}
	pthread_mutex_lock(&d->lock);
	if (d->first_other_port < 0) {
		d->first_other_port = port;
		pr_warn("guest %s I/O port 0x%x, which has no device: ignored (further accesses are counted)",
			out ? "wrote" : "read", port);
	}
	d->other_pio++;
	pthread_mutex_unlock(&d->lock);
	if (!out)
		memset(data, 0xff, size);
}

/* @key's member of @root: 0 with *v, -ENOENT or -EINVAL. */
static int member_u64(json_object *root, const char *key, uint64_t *v)
{
	json_object *o;

	if (!json_object_object_get_ex(root, key, &o))
		return -ENOENT;
	/* null is o == NULL; a negative int64 is a negative (-0 is 0). */
	if (!json_object_is_type(o, json_type_int) ||
	    json_object_get_int64(o) < 0)
		return -EINVAL;
	*v = json_object_get_uint64(o);
	return 0;
}

/*
 * Whether @key's UINT64_MAX in @s (@n bytes, one JSON object) stands for
 * a larger number. json-c 0.16 keeps an integer above UINT64_MAX as
 * UINT64_MAX (strtoull's clamp, JSON_TOKENER_STRICT or not) and its
 * getters do not tell; the only trace is the ERANGE that strtoull leaves
 * in errno during the tokener call that ends the number. So @s is fed to
 * a tokener one byte at a time, which finds where each number that
 * overflowed ends; the number is made a fraction there ("N.0") and the
 * whole parsed again: if @key's value has turned into a double, it was
 * that number. 1 if so (also if the byte-wise parse cannot finish, so
 * the value is never vouched for blindly), 0 if not, -ENOMEM.
 */
static int report_clamped(const char *s, size_t n, const char *key)
{
	char t[VMM_LINE_MAX + 2];
	json_tokener *tok = json_tokener_new();
	json_object *done = NULL, *root, *o;
	int ret = 0;

	if (!tok)
		return -ENOMEM;
	/* Not VALIDATE_UTF8: 0.16 refuses a character split across calls. */
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	for (size_t i = 0; i < n && !ret && !done; i++) {
		int err;

		errno = 0;
		done = json_tokener_parse_ex(tok, s + i, 1);
		err = errno;
		if (!done &&
		    json_tokener_get_error(tok) != json_tokener_continue)
			break;
		if (err != ERANGE)
			continue;
		memcpy(t, s, i);
		memcpy(t + i, ".0", 2);
		memcpy(t + i + 2, s + i, n - i);
		ret = report_parse(t, n + 2, &root);
		if (!ret)
			ret = json_object_object_get_ex(root, key, &o) &&
			      json_object_is_type(o, json_type_double);
		else if (ret == -EINVAL)
			ret = 0; /* a double's ERANGE: "1e999.0" is no number */
		json_object_put(root);
	}
	if (!done && !ret)
		ret = 1;
	json_object_put(done);
	json_tokener_free(tok);
	return ret;
}

int vmm_report_u64(const char *json, const char *key, uint64_t *v)
{
	size_t n = strnlen(json, VMM_LINE_MAX);
	json_object *root;
	uint64_t u;
	int ret;

	if (n == VMM_LINE_MAX)
		return -EINVAL;
	ret = report_parse(json, n, &root);
	if (ret)
		return ret;
	ret = member_u64(root, key, &u);
	json_object_put(root);
	if (!ret && u == UINT64_MAX) {
		ret = report_clamped(json, n, key);
		if (ret > 0)
			ret = -ERANGE;
	}
	if (!ret)
		*v = u;
	return ret;
}
