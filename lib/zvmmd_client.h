/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_LIB_ZVMMD_CLIENT_H
#define ZVMM_LIB_ZVMMD_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "zvmmd_proto.h"

/*
 * zvmmd's client (docs/zvmmd-protocol.md): the one libzvmm leases guest
 * memory with and `zvmm pool status` asks with. Whoever listens at the
 * socket path is not trusted for being there (a path in a directory
 * another user can write could be theirs): it must be root or this
 * process's own user, and answer within 10 s. Each function takes @path
 * NULL for ZVMMD_DEFAULT_SOCKET, and on an error says in @err (@len
 * bytes) what went wrong and what to do: -ENOENT when no zvmmd is there,
 * -EACCES when this user is not in its group, -EPERM for a listener that
 * is not zvmmd's, or the errno zvmmd answered with.
 */

/*
 * Guest memory leased from zvmmd: the chunks' fds in guest order, what
 * each held when handed out, and the socket whose closing (or this
 * process's exit) ends the lease.
 */
struct zvmmd_lease {
	int sock;
	unsigned int nr;
	int fd[ZVMMD_MAX_CHUNKS];
	struct zvmmd_chunk_ent ent[ZVMMD_MAX_CHUNKS];
	uint64_t zero_bytes, empty_bytes;
};

/*
 * Leases @bytes of @page_bytes pages into @l. Every chunk must be a file
 * zvmmd makes: hugetlbfs of this page size, the stated length, the
 * listener's and mode 0600, no file twice, a filled chunk's every page
 * allocated and an empty chunk's none; anything else refuses the whole
 * lease (-EPROTO). Also -ENOMEM (zvmmd has too little), -EINVAL.
 */
int zvmmd_client_lease(const char *path, uint64_t bytes, uint64_t page_bytes,
		       struct zvmmd_lease *l, char *err, size_t len)
	__attribute__((warn_unused_result));

/* Ends the lease: every chunk fd and the socket closed. */
void zvmmd_client_release(struct zvmmd_lease *l);

/*
 * zvmmd's STATUS_OK text, as it sent it, into @out (@out_len bytes, NUL
 * added; ZVMMD_MSG_MAX holds any). -EPROTO for a reply that is no status.
 */
int zvmmd_client_status(const char *path, char *out, size_t out_len, char *err,
			size_t len) __attribute__((warn_unused_result));

#endif
