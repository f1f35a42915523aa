// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/log.h"
#include "../zeroing/calibrate.h"
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
 * The guest's report: the first line "ZVMM-REPORT {...}" that fits the
 * line buffer whole. A longer one, one that is not a JSON object, or a
 * second report is refused with a warning: whatever the guest sends, the
 * report is bounded (VMM_LINE_MAX) and the first good one stands.
 */
static void report_line_locked(struct vmm_devices *d, const char *json)
{
	size_t n = strlen(json);

	while (n && (json[n - 1] == ' ' || json[n - 1] == '\r'))
		n--;
	if (d->have_report) {
		if (!d->extra_reports++)
			pr_warn("guest sent another report line: the first one is kept");
	} else if (d->line_over) {
		pr_warn("guest report line is longer than %d bytes: ignored",
			VMM_LINE_MAX - 1);
	} else if (n < 2 || json[0] != '{' || json[n - 1] != '}') {
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

int vmm_report_u64(const char *json, const char *key, uint64_t *v)
{
	char pat[64];
	const char *p;
	char *end;
	uint64_t n;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(json, pat);
	if (!p)
		return -ENOENT;
	p += strlen(pat);
	while (*p == ' ')
		p++;
	if (*p < '0' || *p > '9')
		return -EINVAL;
	errno = 0;
	n = strtoull(p, &end, 10);
	if (errno)
		return -errno;
	/* The whole JSON number: "5.5", "5e3" or "5x" is no count. */
	if (*end && !strchr(",}] \t\r\n", *end))
		return -EINVAL;
	*v = n;
	return 0;
}
