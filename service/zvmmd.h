/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_SERVICE_ZVMMD_H
#define ZVMM_SERVICE_ZVMMD_H

/*
 * zvmmd: keeps hugepage memory zeroed ahead of time, in chunks (one
 * hugetlbfs file each, on a mount of its own that only it can reach), and
 * leases it to VMMs over a unix SOCK_SEQPACKET socket (lib/zvmmd_proto.h,
 * docs/zvmmd-protocol.md). docs/DESIGN.md, "zvmmd", says why a chunk is
 * never leased twice: a returned chunk is retired (unlinked, its pages
 * back to the kernel once no one holds them) and a new one is filled in
 * its place, at idle priority, in zvmmd's own thread and cgroup.
 *
 * One struct zvmmd holds the daemon, passed by pointer; each file holds
 * one concept: main.c (parse, new, run, free), chunks.c (mounts, chunk
 * files, the filler thread), leases.c, quarantine.c (the scan thread),
 * trim.c (the trim thread), listener.c (the socket), peers.c
 * (connections and their checks), status.c (STATUS), fdstore.c
 * (systemd's socket activation and fd store), config.c (zvmmd.conf).
 */

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "../lib/holders.h"
#include "../lib/zvmmd_proto.h"
#include "config.h"

/* ------------------------------------------------------------- chunks */

/*
 * A hugetlbfs mount of a pool's. Each pool has one for its stock and its
 * members' chunks, sized to max less [service] root_reserve, and with a
 * reserve one for root's empty chunks: mounted with min_size=, so the
 * kernel holds those pages for root from the start, whatever a member
 * does in the other (docs/DESIGN.md, "Root's reserve").
 */
struct hmount {
	char label[32]; /* its directory under [service] dir: "2M", "2M-root" */
	char dir[PATH_MAX]; /* for messages: [service] dir/label */
	char at[64]; /* the mount point through dirfd: /proc/self/fd/N/label */
	int dirfd; /* its root; -1: none */
	int mnt_id; /* as /proc/PID/fdinfo names it */
	bool mounted; /* by this zvmmd, at @at */
	bool keep_empty; /* root's reserve: to systemd's fd store, held */
	uint64_t size, min; /* its size= and min_size=; 0: none */
};

struct chunk {
	struct chunk *next;
	int fd;
	uint64_t bytes;
	struct stat st;
	char name[48];
	struct hmount *mnt; /* the mount its file is in */
	bool filled; /* every page allocated and zero: leased as ZERO */
	uid_t owner; /* whose lease it was last in: STATUS shows it to them */
	long holder; /* quarantined: who held it at the last look */
	bool looked; /* a walk has looked for its holders since it came back */
	uint32_t pass_from; /* the first whole pass that looks for it */
	uint32_t pass_held; /* the last pass that found it held */
	char holder_comm[HOLDER_COMM_LEN];
	/*
	 * Charged to @charged_to's share of this pool while leased, and
	 * after, returned or quarantined, until it is retired: a member
	 * that keeps its chunks mapped past its lease cannot lease its
	 * share again beside them (chunk_uncharge()).
	 */
	bool trim_said; /* its growth logged once */
	uint64_t *charged_to;
	unsigned int *charged_chunks;
	uint64_t charge;
};

/*
 * A leased chunk retired while something no scan sees still held its
 * pages (an fd in flight, a pipe's pages): its charge stays on its user
 * until the pages outside every chunk file fall below what the ghosts
 * hold (pool_account()), so hiding memory does not make room in a share.
 */
struct ghost {
	struct ghost *next;
	uint64_t bytes; /* its pages the retire did not free */
	uint64_t *charged_to;
	unsigned int *charged_chunks;
	uint64_t charge;
};

/* The memory of one page size on one node: one hugetlbfs mount. */
struct pool {
	const struct zvmmd_pool_cfg *cfg;
	char label[24]; /* "2M", "1G", "2M-node1" */
	char dir[PATH_MAX]; /* for messages: [service] dir/label */
	struct hmount m; /* the stock's and members' chunks */
	struct hmount r; /* root's empty chunks, with a reserve; else unused */
	/*
	 * [service] root_reserve of this pool, in bytes, and what the
	 * kernel holds of it now (0 until root's mount is made).
	 */
	uint64_t reserve_cfg, reserve;
	bool refilling; /* below low: fill up to high */
	uint64_t seq;
	struct chunk *zero; /* filled, ready to lease */
	struct chunk *quarantine; /* returned, still held by someone */
	uint64_t zero_bytes, filling_bytes, leased_bytes, quarantined_bytes;
	uint64_t filled_bytes; /* filled since start, for the rate */
	double fill_seconds;
	int fill_error; /* the last fill's, shown in status */
	/*
	 * Chunks of ended leases the loop's short walk had no time for:
	 * still counted in leased_bytes until the scan thread has looked,
	 * then retired or quarantined (quarantine.c).
	 */
	struct chunk *returned;
	/*
	 * What the kernel says the mount holds (fstatfs) beyond the books:
	 * pages something the walk cannot see still holds (an fd in
	 * flight, vmsplice, io_uring). Counted held, never free; set by
	 * pool_account() with the lock held, the books then whole.
	 */
	uint64_t unseen_bytes;
	struct ghost *ghosts; /* newest first */
	struct chunk *filling; /* the filler's, while it fills it */
	/*
	 * Since when (clock_now()) every count found the ghosts holding
	 * more than the pages outside every chunk file, and the most found
	 * outside meanwhile; 0 while they do not (ghosts_settle()).
	 */
	double ghosts_over_since;
	uint64_t ghosts_outside_max;
};

/* ------------------------------------------------------ leases, peers */

struct lease {
	struct lease *next;
	uint32_t id;
	struct pool *pool;
	struct chunk *chunks;
	unsigned int nr;
	uint64_t bytes;
};

enum ev_kind {
	EV_LISTEN = 1,
	EV_SIGNAL,
	EV_TIMER,
	EV_CLIENT,
	EV_PIDFD,
	EV_SCAN,
	EV_TRIM
};

/* What an epoll event points at. */
struct ev {
	enum ev_kind kind;
	struct client *c;
};

/*
 * Each connection costs zvmmd two descriptors (the socket, the client's
 * pidfd). A client asks at once (a lease, a status), so one that holds
 * no lease is closed [service] idle seconds after it was accepted,
 * whatever it sends: a group member cannot pin the daemon's descriptors
 * with idle connections, only with leases, which its share bounds. At
 * most MAX_CLIENTS at a time, and when the process runs out of
 * descriptors anyway accepting pauses until one is closed (the listening
 * socket would otherwise wake epoll forever).
 */
#define MAX_CLIENTS 4096

/*
 * Root's reserve: peers other than root may have at most MAX_CLIENTS
 * less this many open in all, so that root's connections are never
 * refused because of theirs ([service] user_connections bounds each uid).
 */
#define ROOT_RESERVE 64
_Static_assert(MAX_CLIENTS - ROOT_RESERVE == ZVMMD_USER_CONNECTIONS_MAX,
	       "config.h's bound of user_connections");

/*
 * STATUS lists at most this many leases and quarantined chunks in all
 * (the rest counted, in each pool's leases_total and quarantined_total),
 * so that its reply always fits one message.
 */
#define STATUS_LISTED 64

/*
 * One uid's use, the way dbus-broker accounts per user: its connections
 * and the bytes its leases are charged in each pool. Made at its first
 * connection, freed when its last closes (no lease outlives its
 * connection).
 */
struct peer_user {
	struct peer_user *next;
	uid_t uid;
	unsigned int connections;
	unsigned int chunks; /* charged to it: it outlives its connections */
	uint64_t charged[ZVMMD_NR_POOLS];
};

/*
 * Refused peers kept open until they close, so each reads why (closing
 * on a request still unread would reset the connection first); at most
 * this many, then a refusal closes at once.
 */
#define MAX_REFUSED 16

/* A connected client: its socket, its pidfd, at most one lease. */
struct client {
	struct ev sock_ev, pid_ev;
	int fd, pidfd;
	pid_t pid;
	uid_t uid;
	char comm[32];
	struct peer_user *user; /* its uid's accounting */
	bool refused; /* not root, not in the group: every message refused */
	double since; /* accepted: CLOCK_MONOTONIC */
	struct lease *lease;
	/* A LEASE waiting for a round of trims (lease_make()). */
	bool waiting;
	struct zvmmd_lease_req wait_req;
	struct client *next;
};

/* A cut of a chunk its holder grew (trim.c). */
struct trim {
	int fd; /* a dup of the chunk's: the loop may retire it meanwhile */
	int mount_fd; /* a dup of its pool's mount's, to weigh the cut */
	struct pool *pool;
	struct chunk *c; /* the loop's to look up: it may be gone */
	ino_t ino;
	uint64_t bytes, end; /* its length, and that in whole pages */
	off_t size; /* what it had been grown to */
	uint64_t kept; /* what the cut took out of the file, not the mount */
	int err;
	bool done;
};

/* ------------------------------------------------------------- zvmmd */

/* The mounts systemd may keep for zvmmd: two a pool (struct hmount). */
#define ZVMMD_NR_STORED (2 * ZVMMD_NR_POOLS)

struct zvmmd {
	struct zvmmd_config cfg;
	struct pool pools[ZVMMD_NR_POOLS];
	int dirfd; /* [service] dir, opened without symbolic links */
	/* What systemd passed (fdstore.c): zvmmd.socket's, kept mounts. */
	int passed_socket;
	struct {
		int fd;
		char label[32];
	} stored[ZVMMD_NR_STORED];

	/*
	 * Shared with the filler thread: the pools' lists and counts, under
	 * @lock; @stop and @last_lease_ns are read without it, atomically.
	 */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop;
	uint64_t last_lease_ns; /* CLOCK_MONOTONIC of the last lease */
	pthread_t filler;
	bool filler_on;
	/*
	 * [scrub] priority = idle: the gate thread lets the filler zero a
	 * pass of pages each time it runs (chunks.c). @gate_on is set
	 * before the filler starts and cleared once both are joined; the
	 * rest are under @gate_lock.
	 */
	pthread_mutex_t gate_lock;
	pthread_cond_t gate_cv;
	pthread_t gate;
	bool gate_on, gate_want, gate_open, gate_stop, gate_exited;

	/* The event loop's alone. */
	int epfd, listen_fd, signal_fd, timer_fd;
	struct ev listen_ev, signal_ev, timer_ev;
	bool bound; /* the socket file is ours to remove */
	bool listen_paused;
	gid_t gid; /* the peers' group, (gid_t)-1: root alone */
	struct client *clients;
	unsigned int nr_clients, nr_refused;
	struct peer_user *users;
	unsigned int nr_members; /* connections of peers other than root */
	double users_logged; /* the last "too many connections" line */
	unsigned int users_unlogged; /* refusals since, not logged */
	uint32_t next_lease;

	/*
	 * Who holds chunks (quarantine.c): one walk of /proc for them all,
	 * on the scan thread, so that no walk holds up the loop. The loop
	 * hands it @scan_chunk's files (@scan_req, under @scan_lock) and
	 * takes the result back when @scan_efd is readable; the arrays are
	 * the thread's from the hand-over to the eventfd, the loop's
	 * otherwise.
	 */
	pthread_t scan_thread;
	bool scan_on;
	pthread_mutex_t scan_lock;
	pthread_cond_t scan_wake;
	bool scan_req, scan_stop, scan_exited; /* scan_stop also atomically */
	int scan_efd;
	struct ev scan_ev;
	bool scan_busy, scan_again; /* the loop's */
	unsigned int scan_n, scan_cap; /* the arrays' entries */
	int scan_ret; /* holders_walk_from()'s */
	/*
	 * A pass is one walk of /proc from the first process to the last,
	 * in slices of SCAN_DEADLINE_S that go on from @scan_resume: a
	 * chunk no slice of a whole pass found held is free.
	 */
	long scan_resume;
	uint32_t pass;
	struct chunk **scan_chunk;
	struct holder_file *holder_file;
	long *holder_pid;
	char (*holder_comm)[HOLDER_COMM_LEN];
	/*
	 * Chunks their holders grew, cut back on a thread of their own
	 * (trim.c): the loop hands it @trims (@trim_req, under @trim_lock)
	 * and takes them back when @trim_efd is readable.
	 */
	pthread_t trim_thread;
	bool trim_on;
	pthread_mutex_t trim_lock;
	pthread_cond_t trim_wake;
	bool trim_req, trim_stop, trim_exited; /* trim_stop also atomically */
	int trim_efd;
	struct ev trim_ev;
	bool trim_busy; /* the loop's */
	unsigned int trim_n, trim_cap;
	struct trim *trims;
	/* The loop's own short walk at a lease's end (quarantine.c). */
	double quick_window, quick_spent; /* QUICK_S's budget, per second */
	struct holder_file quick_file[ZVMMD_MAX_CHUNKS];
	long quick_pid[ZVMMD_MAX_CHUNKS];
	char quick_comm[ZVMMD_MAX_CHUNKS][HOLDER_COMM_LEN];
};

/* chunks.c: mounts, chunk files, the filler thread. */
int zvmmd_dir_open(const char *path, mode_t mode, const char *key)
	__attribute__((warn_unused_result));
int pools_open(struct zvmmd *d) __attribute__((warn_unused_result));
void pools_close(struct zvmmd *d);
uint64_t pool_held_bytes(const struct pool *p);
void pool_account(struct zvmmd *d, struct pool *p);
int chunk_create(struct pool *p, struct hmount *m, uint64_t bytes,
		 struct chunk **out) __attribute__((warn_unused_result));
uint64_t pool_mount_used(const struct pool *p);
/* Free hugepages of @page_bytes the kernel has not promised anyone. */
uint64_t free_pages(uint64_t page_bytes);
uint64_t pool_reserve_left(const struct pool *p);
void pool_tidy(struct zvmmd *d, struct pool *p);
void chunk_retire(struct pool *p, struct chunk *c);
void chunk_uncharge(struct chunk *c);
bool chunk_grown(const struct pool *p, const struct chunk *c);
void chunk_charge_cut(struct pool *p, struct chunk *c, uint64_t kept);
uint64_t mount_used(int fd);
int chunk_reserve(struct chunk *c);
int filler_start(struct zvmmd *d) __attribute__((warn_unused_result));
bool filler_stop(struct zvmmd *d);
void filler_poke(struct zvmmd *d);

/* fdstore.c: systemd's socket activation and fd store. */
void fdstore_take(struct zvmmd *d);
int fdstore_pool(struct zvmmd *d, const char *label);
void fdstore_close_rest(struct zvmmd *d);
int fdstore_send(const char *label, int fd);

/* leases.c */
int lease_make(struct zvmmd *d, struct client *cl,
	       const struct zvmmd_lease_req *req);
void lease_end(struct zvmmd *d, struct lease *l);
void leases_waiting(struct zvmmd *d);

/* trim.c: chunks their holders grew, cut back off the loop. */
int trim_start(struct zvmmd *d) __attribute__((warn_unused_result));
bool trims_start(struct zvmmd *d);
void trims_done(struct zvmmd *d);
bool trim_stop(struct zvmmd *d);

/* quarantine.c */
void quarantine_returned(struct zvmmd *d, struct lease *l);
void quarantine_check(struct zvmmd *d);
int scan_start(struct zvmmd *d) __attribute__((warn_unused_result));
void scan_free(struct zvmmd *d);
void scan_done(struct zvmmd *d);
bool scan_stop(struct zvmmd *d);

/* listener.c: the socket clients connect to. */
bool listener_activated(const struct zvmmd *d);
bool listener_taken(const struct zvmmd *d);
int listener_open(struct zvmmd *d) __attribute__((warn_unused_result));
void listener_close(struct zvmmd *d);
void listener_pause(struct zvmmd *d, const char *why);
void listener_resume(struct zvmmd *d);
void listener_accept(struct zvmmd *d);

/* peers.c: connections, their checks and messages. */
void peer_new(struct zvmmd *d, int fd);
bool peer_read(struct zvmmd *d, struct client *cl);
void peer_wait(struct zvmmd *d, struct client *cl,
	       const struct zvmmd_lease_req *req);
void peer_unwait(struct zvmmd *d, struct client *cl);
void peer_drop(struct zvmmd *d, struct client *cl);
void peers_sweep_idle(struct zvmmd *d, struct epoll_event *evs, int from,
		      int n);
void peers_forget(struct epoll_event *evs, int from, int n,
		  const struct client *cl);
void peers_drop_all(struct zvmmd *d);
void peers_users_sweep(struct zvmmd *d, bool all);
int send_error(int fd, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* leases.c: [service] user_share of pool @p, in bytes. */
uint64_t lease_share(const struct zvmmd *d, const struct pool *p);

/* status.c: the reply to @cl, whose uid decides what it is shown. */
int status_send(struct zvmmd *d, const struct client *cl);

#endif
