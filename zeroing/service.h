/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_ZEROING_SERVICE_H
#define ZVMM_ZEROING_SERVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "../service/proto.h"

/*
 * Guest memory leased from zvmmd (docs/zvmmd-protocol.md): the chunks'
 * fds in guest order, what each held when handed out, and the socket
 * whose closing (or this process's exit) ends the lease.
 */
struct zero_lease {
	int sock;
	unsigned int nr;
	int fd[ZVMMD_MAX_CHUNKS];
	struct zvmmd_chunk_ent ent[ZVMMD_MAX_CHUNKS];
	uint64_t zero_bytes, empty_bytes;
};

/*
 * Leases @bytes of @page_bytes pages from zvmmd at @path (NULL: its
 * default socket). 0, or a negative errno with @err saying what to do:
 * -ENOENT (no zvmmd there), -EACCES (not in its group), or the errno
 * zvmmd answered with (-ENOMEM: it has too little, -EINVAL).
 */
int zero_service_lease(const char *path, uint64_t bytes, uint64_t page_bytes,
		       struct zero_lease *l, char *err, size_t len)
	__attribute__((warn_unused_result));

/* Ends the lease: every chunk fd and the socket closed. */
void zero_service_release(struct zero_lease *l);

#define ZERO_SERVICE_SOCKET "/run/zvmm/zvmmd.sock"

#endif
