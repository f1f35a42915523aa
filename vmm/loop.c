// SPDX-License-Identifier: MIT
#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "../lib/log.h"
#include "../lib/clock.h"
#include "loop.h"
#include "progress.h"

enum { EV_GUEST = 1, EV_STOP, EV_TIMER };

static int arm_poll(struct io_uring *ring, int fd, uint64_t tag)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe)
		return -EBUSY;
	io_uring_prep_poll_add(sqe, fd, POLLIN);
	io_uring_sqe_set_data64(sqe, tag);
	return 0;
}

static int arm_timer(struct io_uring *ring, struct __kernel_timespec *ts)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe)
		return -EBUSY;
	io_uring_prep_timeout(sqe, ts, 0, 0);
	io_uring_sqe_set_data64(sqe, EV_TIMER);
	return 0;
}

static void stop_all(struct vmm_loop *l)
{
	zvmm_guest_cancel(l->guest);
	vmm_vm_request_stop(l->vm, VMM_STOP_ERROR, 0,
			    "the guest was stopped: serving its memory failed");
}

static void draw_progress(struct vmm_loop *l, struct vmm_progress *p)
{
	struct zvmm_stats s;

	if (!p->on)
		return;
	zvmm_guest_stats(l->guest, &s);
	if (s.background_active)
		vmm_progress_update(p, "background scrub", s.background_bytes,
				    s.background_bytes +
					    s.dirty_pages * s.page_bytes);
	else
		vmm_progress_end(p);
}

int vmm_loop_run(struct vmm_loop *l)
{
	struct __kernel_timespec tick = { .tv_sec = 0, .tv_nsec = 100000000 };
	struct io_uring_cqe *cqe;
	struct io_uring ring;
	bool stopped = false, timed_out = false;
	double deadline = l->timeout > 0 ? clock_now() + l->timeout : 0;
	struct vmm_progress progress;
	int fd, ret;

	ret = io_uring_queue_init(16, &ring, 0);
	if (ret) {
		pr_err("io_uring_queue_init: %s", strerror(-ret));
		stop_all(l);
		return ret;
	}
	vmm_progress_begin(&progress, l->quiet);
	fd = zvmm_guest_fd(l->guest);
	ret = arm_poll(&ring, l->vm->stop_fd, EV_STOP);
	if (!ret && fd >= 0)
		ret = arm_poll(&ring, fd, EV_GUEST);
	if (!ret)
		ret = arm_timer(&ring, &tick);
	while (!ret && !stopped) {
		ret = io_uring_submit_and_wait(&ring, 1);
		if (ret < 0) {
			if (ret == -EINTR) {
				ret = 0;
				continue;
			}
			break;
		}
		ret = 0;
		while (!ret && io_uring_peek_cqe(&ring, &cqe) == 0) {
			uint64_t tag = io_uring_cqe_get_data64(cqe);
			int res = cqe->res;

			io_uring_cqe_seen(&ring, cqe);
			if (res < 0 && res != -ETIME) {
				ret = res;
				break;
			}
			switch (tag) {
			case EV_GUEST:
				ret = zvmm_guest_process(l->guest);
				if (!ret)
					ret = arm_poll(&ring, fd, EV_GUEST);
				break;
			case EV_STOP:
				stopped = true;
				break;
			case EV_TIMER:
				/* hybrid: how far the background scrub is */
				draw_progress(l, &progress);
				/* To within one tick (100 ms). */
				if (deadline && !timed_out &&
				    clock_now() >= deadline) {
					timed_out = true;
					zvmm_guest_cancel(l->guest);
					vmm_vm_request_stop(
						l->vm, VMM_STOP_TIMEOUT, 0,
						"the guest ran past --timeout");
				}
				ret = arm_timer(&ring, &tick);
				break;
			}
		}
	}
	if (ret) {
		pr_err("event loop: %s", strerror(-ret));
		stop_all(l);
	}
	vmm_progress_end(&progress);
	io_uring_queue_exit(&ring);
	return ret;
}
