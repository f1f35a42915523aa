#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""libzvmm's system calls, by public call and by library thread, as
strace(1) sees them while tests/seccomp_tenant.c runs tenants under every
policy, serving mode and on_exit: the list of libzvmm(3)'s SECCOMP
section, include/zvmm/syscalls.list.

  tools/syscalls.py --tenant build/tests/seccomp-tenant [--zvmmd BIN]
                    [--write include/zvmm/syscalls.list | --check LIST]

Root, with 2 MiB hugepages to reserve. Each run of the tenant marks the
library calls it makes (--mark-calls: write(-1, "@zvmm_call") before and
write(-1, "@") after); what its main thread does between two marks is
that call's, what a thread that names itself zvmm-worker, zvmm-serve or
zvmm-verify does is that thread's. --check fails when a system call seen
is missing from LIST (a new one the library makes: the list and the
filters built from it would kill the embedder); one listed but not seen
this time is only said (paths differ between machines).
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

NR_2M = '/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages'
LINE = re.compile(r'^(\d+)\s+(?:<\.\.\. (\w+) resumed>|(\w+)\()(.*)$')
MARK = re.compile(r'^write\(-1, "@([\w]*)"')
NAME = re.compile(r'^prctl\(PR_SET_NAME, "([\w-]+)"')

HEADER = """\
# libzvmm's system calls: the SECCOMP section of libzvmm(3).
#
# One "CONTEXT SYSCALL" pair per line. CONTEXT is a public call (the
# thread that makes it makes these) or a thread the library starts
# (zvmm-worker, zvmm-verify, zvmm-serve), which inherits the seccomp
# filter of the thread whose call started it: workers and verify
# threads start in zvmm_guest_open() and zvmm_guest_prepare(), the
# serving thread in zvmm_guest_serve_thread(). So the filter of a
# thread that calls zvmm_guest_open() must allow what those threads
# make too, and the simplest filter that works is every line's.
#
# x86_64 names, as Debian 12's glibc 2.36 makes them (clone3, rseq);
# another C library or architecture may use near relatives (clone,
# ppoll, newfstatat/fstatat64). Written by tools/syscalls.py from what
# strace(1) saw while tests/seccomp_tenant.c ran tenants under every
# policy, serving mode and on_exit, and checked by tests/test_seccomp.c,
# which runs them under a filter of exactly these. Not listed: what the
# embedder's own code makes, and a vCPU thread's, which makes none of
# libzvmm's (its faults are served by the library's threads).
"""


def parse(path, per):
    """Adds {context: {syscall}} seen in strace output @path to @per."""
    main = None
    ctx = {}  # main thread: the call it is in ('' between calls)
    tids = {}  # tid -> [syscalls]
    names = {}  # tid -> the name it gave itself
    with open(path) as f:
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            tid = int(m.group(1))
            if m.group(2):  # the end of a call already counted
                continue
            sc, rest = m.group(3), m.group(3) + '(' + m.group(4)
            if main is None:
                main = tid
            if tid == main:
                mk = MARK.match(rest)
                if mk:
                    ctx[main] = mk.group(1)
                    continue
                cur = ctx.get(main, '')
                if cur:
                    per.setdefault(cur, set()).add(sc)
                continue
            nm = NAME.match(rest)
            if nm:
                names[tid] = nm.group(1)
            tids.setdefault(tid, []).append(sc)
    for tid, calls in tids.items():
        name = names.get(tid)
        if name and name.startswith('zvmm-'):
            per.setdefault(name, set()).update(calls)


POLICY = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..',
                      'configs', 'hybrid.conf')


def run(tenant, args, out):
    cmd = ['strace', '-f', '-qq', '-s', '48', '-o', out, tenant,
           '--mark-calls'] + args
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if r.returncode:
        sys.exit('syscalls: %s failed (%d): %s' %
                 (' '.join(cmd), r.returncode, r.stderr.strip()))


def hugetlbfs(path):
    os.makedirs(path, exist_ok=True)
    subprocess.run(['mount', '-t', 'hugetlbfs', '-o', 'pagesize=2M',
                    'none', path], check=True)


def collect(tenant, zvmmd):
    per = {}
    nr_old = None
    tmp = tempfile.mkdtemp(prefix='zvmm-syscalls.')
    mnt = os.path.join(tmp, 'mnt')
    daemon = None
    try:
        hugetlbfs(mnt)
        state = os.path.join(tmp, 'state')
        common = ['--reserve', '--profile', os.path.join(tmp, 'profile'),
                  '--state-dir', state]
        runs = [['--calibrate', '--policy', POLICY, '--calibration-out',
                 os.path.join(tmp, 'calibration.ini')],
                ['--pool', os.path.join(mnt, 'pool'), '--rounds', '2']]
        if zvmmd:
            # zvmmd's own pages (its max), beside what --reserve takes
            # for each tenant: its empty leases are promised their pages.
            with open(NR_2M) as f:
                nr_old = f.read().strip()
            with open(NR_2M, 'w') as f:
                f.write(str(int(nr_old) + 48))
            sock = os.path.join(tmp, 'zvmmd.sock')
            conf = os.path.join(tmp, 'zvmmd.conf')
            with open(conf, 'w') as f:
                f.write('[service]\nsocket = %s\ndir = %s\ngroup = root\n'
                        '[pages.2M]\nchunk = 16M\nlow = 32M\nhigh = 64M\n'
                        'max = 96M\n' % (sock, os.path.join(tmp, 'chunks')))
            ztrace = os.path.join(tmp, 'trace.zvmmd')
            daemon = subprocess.Popen(['strace', '-f', '-qq', '-s', '48',
                                       '-o', ztrace, zvmmd, '--config',
                                       conf],
                                      stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
            for _ in range(200):
                if os.path.exists(sock):
                    break
                time.sleep(0.05)
            runs.append(['--socket', sock])
        for i, args in enumerate(runs):
            out = os.path.join(tmp, 'trace.%d' % i)
            run(tenant, common + args, out)
            parse(out, per)
        if daemon:
            # zvmmd itself, not strace: strace would detach and leave it.
            with open(ztrace) as f:
                pid = int(f.readline().split()[0])
            os.kill(pid, signal.SIGTERM)
            daemon.wait(timeout=60)
            daemon = None
            with open(ztrace) as f:
                per['zvmmd'] = {m.group(3) for m in map(LINE.match, f)
                                if m and m.group(3)}
    finally:
        if daemon:
            # A tenant failed: zvmmd itself first (killing strace alone
            # left it running, its mount and pages with it), then strace.
            try:
                with open(ztrace) as f:
                    os.kill(int(f.readline().split()[0]), signal.SIGTERM)
                daemon.wait(timeout=60)
            except (OSError, ValueError, IndexError,
                    subprocess.TimeoutExpired):
                daemon.kill()
                daemon.wait(timeout=30)
        subprocess.run(['umount', mnt], stderr=subprocess.DEVNULL)
        shutil.rmtree(tmp, ignore_errors=True)
        if nr_old is not None:
            with open(NR_2M, 'w') as f:
                f.write(nr_old)
    return per


# What each function libzvmm imports may call, on x86_64 with Debian
# 12's glibc 2.36, libnuma 2.0.16, json-c and libinih: the code's side of
# the list. A function not here fails --imports (add it, reasoned).
MALLOC = 'brk mmap munmap mprotect madvise'
THREAD = 'clone3 clone mmap mprotect munmap madvise rt_sigprocmask ' \
    'rseq set_robust_list exit futex sched_setaffinity'
SYSFS = 'openat read close'
IMPORTS = {
    # allocation: the heap grows, arenas of new threads are mapped
    'malloc': MALLOC, 'calloc': MALLOC, 'realloc': MALLOC, 'free': MALLOC,
    'strdup': MALLOC, 'asprintf': MALLOC, 'open_memstream': MALLOC,
    'json_*': MALLOC, 'numa_allocate_cpumask': MALLOC,
    'numa_bitmask_free': MALLOC,
    # threads (THREAD: creating one, its start and exit, and a join)
    'pthread_create': THREAD, 'pthread_join': 'futex munmap',
    'pthread_cond_broadcast': 'futex', 'pthread_cond_timedwait': 'futex',
    'pthread_cond_wait': 'futex', 'pthread_mutex_lock': 'futex',
    'pthread_mutex_unlock': 'futex', 'pthread_once': 'futex',
    'pthread_setaffinity_np': 'sched_setaffinity',
    'pthread_sigmask': 'rt_sigprocmask', 'sched_getaffinity':
    'sched_getaffinity', 'sched_yield': 'sched_yield',
    'pthread_mutexattr_*': '', '__sched_cpucount': '',
    # the vDSO answers these; a clock source it cannot read falls back
    'clock_gettime': 'clock_gettime', 'sched_getcpu': 'getcpu',
    # files
    'open': 'openat', 'openat': 'openat', 'fopen': 'openat ' + MALLOC,
    'opendir': 'openat newfstatat ' + MALLOC, 'fdopendir':
    'newfstatat fcntl ' + MALLOC, 'readdir': 'getdents64',
    'closedir': 'close ' + MALLOC, 'close': 'close', 'fclose':
    'close write ' + MALLOC, 'read': 'read', 'fgets': 'read',
    'write': 'write', 'fwrite': 'write', 'fprintf': 'write',
    'fflush': 'write', 'fstat': 'newfstatat', 'fstatat': 'newfstatat',
    'stat': 'newfstatat', 'lstat': 'newfstatat', 'fstatfs': 'fstatfs',
    'statfs': 'statfs', 'fsync': 'fsync', 'ftruncate': 'ftruncate',
    'fallocate': 'fallocate', 'futimens': 'utimensat', 'mkdir': 'mkdir',
    'rename': 'rename', 'renameat': 'renameat', 'unlink': 'unlink',
    'unlinkat': 'unlinkat', 'flock': 'flock', 'fcntl': 'fcntl',
    'faccessat': 'faccessat2 faccessat', 'memfd_create': 'memfd_create',
    'readlink': 'readlink', 'readlinkat': 'readlinkat',
    'ioctl': 'ioctl', 'poll': 'poll',
    'epoll_create1': 'epoll_create1', 'epoll_ctl': 'epoll_ctl',
    'epoll_wait': 'epoll_wait', 'eventfd': 'eventfd2',
    # memory
    'mmap': 'mmap', 'munmap': 'munmap', 'mprotect': 'mprotect',
    'madvise': 'madvise',
    # zvmmd's socket
    'socket': 'socket', 'connect': 'connect', 'send': 'sendto',
    'recvmsg': 'recvmsg', 'getsockopt': 'getsockopt',
    'setsockopt': 'setsockopt',
    # the process
    'geteuid': 'geteuid', 'getpid': 'getpid', 'getrandom': 'getrandom',
    'prctl': 'prctl', 'uname': 'uname', 'usleep': 'clock_nanosleep',
    'sysconf': SYSFS + ' sysinfo', 'secure_getenv': '',
    # syscall(2) itself: SYS_userfaultfd, SYS_openat2 (grep syscall\()
    'syscall': 'userfaultfd openat2',
    # a group's name for a message: NSS reads /etc/group, and may load
    # a module that asks nscd or systemd-userdbd over a socket
    'getgrgid': 'openat read close newfstatat lseek socket connect ' +
    MALLOC,
    # libnuma: its init ran when the library was loaded; these read
    # sysfs the first time, or set a policy
    'numa_available': 'get_mempolicy', 'numa_node_size64': SYSFS,
    'numa_node_to_cpus': SYSFS, 'numa_node_of_cpu': SYSFS,
    'numa_distance': SYSFS, 'numa_sched_setaffinity': 'sched_setaffinity',
    'numa_set_preferred': 'set_mempolicy', 'numa_tonode_memory': 'mbind',
    'get_mempolicy': 'get_mempolicy', 'set_mempolicy': 'set_mempolicy',
    'numa_allocate_nodemask': MALLOC,
    'numa_max_node': '', 'numa_all_cpus_ptr': '', 'numa_nodes_ptr': '',
    'numa_bitmask_*': '',
    # libinih reads through its stream's fgets
    'ini_parse_stream': '',
    # an assertion that fails aborts: the process ends either way
    '__assert_fail': '',
    # zvmmd's own (dist/zvmmd.syscalls): the program, its socket, its
    # mounts and chunk files, signals and timers in its event loop
    '__libc_start_main': '', 'getopt_long': '', 'getenv': '', 'unsetenv': '',
    'optarg': '', 'optind': '', 'stdout': '', 'sigaddset': '',
    'sigemptyset': '', 'numa_parse_cpustring_all': SYSFS,
    'printf': 'write', 'fputc': 'write', 'vfprintf': 'write',
    'pthread_cond_signal': 'futex', 'accept4': 'accept4', 'bind': 'bind',
    'listen': 'listen', 'recv': 'recvfrom', 'sendmsg': 'sendmsg',
    'dup': 'dup', 'fchownat': 'fchownat', 'mkdirat': 'mkdirat',
    'mount': 'mount', 'umount2': 'umount2', 'umask': 'umask',
    'nanosleep': 'clock_nanosleep', 'getrlimit': 'prlimit64',
    'setrlimit': 'prlimit64', 'sched_setscheduler': 'sched_setscheduler',
    'signalfd': 'signalfd4', 'timerfd_create': 'timerfd_create',
    'timerfd_settime': 'timerfd_settime',
    'getgrnam': 'openat read close newfstatat lseek socket connect ' +
    MALLOC,
}
# syscall(2) in zvmmd: SYS_pidfd_open for each peer, SYS_openat2,
# SYS_pidfd_send_signal (signal 0: is the peer whose comm was read alive)
DAEMON_SYSCALL = 'pidfd_open openat2 pidfd_send_signal'
# No system call: strings, numbers, formatting into memory, the ABI;
# and a sanitizer build's runtime (SANITIZE=), which is not the library.
PURE = re.compile(r'^(_ITM_|__cxa_finalize|__gmon_start__|__ctype_|'
                  r'__(asan|ubsan|tsan|lsan|sanitizer)_|'
                  r'__errno_location|__tls_get_addr|__isoc99_sscanf|'
                  r'mem(chr|cmp|cpy|move|set)$|str|snprintf|vsnprintf|'
                  r'qsort|dirname|dirfd|fileno|ferror|sigfillset|stderr|'
                  r'pthread_(self|attr_|condattr_|cond_init|cond_destroy|'
                  r'mutex_init|mutex_destroy))')


def imports_of(lib):
    out = subprocess.run(['nm', '-D', '--undefined-only', lib],
                         stdout=subprocess.PIPE, text=True, check=True)
    return sorted({ln.split()[-1].split('@')[0]
                   for ln in out.stdout.splitlines() if ln.strip()})


def check_imports(lib, path, daemon=False):
    """Every system call an import may make is in the list at @path
    (and, for zvmmd, in dist/zvmmd.syscalls or always allowed)."""
    listed = set().union(*read_list(path).values())
    if daemon:
        listed |= set().union(*read_list(DAEMON).values()) | SYSTEMD_ALWAYS
    bad = 0
    for fn in imports_of(lib):
        key = fn if fn in IMPORTS else next(
            (k for k in IMPORTS if k.endswith('*') and
             fn.startswith(k[:-1])), None)
        if key is None:
            if PURE.match(fn):
                continue
            print('syscalls: %s imports %s, which tools/syscalls.py '
                  'does not know: add what it calls to IMPORTS' %
                  (os.path.basename(lib), fn))
            bad = 1
            continue
        calls = set(IMPORTS[key].split())
        if daemon and fn == 'syscall':
            calls |= set(DAEMON_SYSCALL.split())
        miss = calls - listed
        if miss:
            print('syscalls: %s imports %s, which may make %s: not '
                  'in the list' % (os.path.basename(lib), fn,
                                   ' '.join(sorted(miss))))
            bad = 1
    return bad


def read_list(path):
    per = {}
    with open(path) as f:
        for line in f:
            line = line.split('#', 1)[0].split()
            if len(line) == 2:
                per.setdefault(line[0], set()).add(line[1])
    return per


# systemd allows these whatever SystemCallFilter= says (systemd.exec(5)).
SYSTEMD_ALWAYS = set('execve exit exit_group getrlimit rt_sigreturn '
                     'sigreturn clock_getres clock_gettime clock_nanosleep '
                     'gettimeofday nanosleep time'.split())
DAEMON = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..',
                      'dist', 'zvmmd.syscalls')
DAEMON_HEADER = """\
# What zvmmd makes beyond libzvmm's list (include/zvmm/syscalls.list):
# its unit's SystemCallFilter= is both lists (dist/systemd/zvmmd.service;
# tests/test_seccomp.c checks it and runs zvmmd under that filter).
# Written by tools/syscalls.py from what strace(1) saw zvmmd make from
# its execve to its exit on SIGTERM while tenants leased from it; what
# systemd always allows (execve, exit_group, the clocks) is left out.
"""


def write_daemon(seen, per):
    lib = set().union(*per.values())
    have = read_list(DAEMON).get('zvmmd', set()) \
        if os.path.exists(DAEMON) else set()
    add = (seen | have) - lib - SYSTEMD_ALWAYS
    with open(DAEMON, 'w') as f:
        f.write(DAEMON_HEADER + '\n')
        f.write(''.join('zvmmd %s\n' % c for c in sorted(add)))
    print('syscalls: %s: %d system calls' % (DAEMON, len(add)))


def man_table(per):
    """libzvmm(3)'s SECCOMP table: .TP, the context, its calls."""
    out = []
    for c in sorted(per, key=lambda c: (c.startswith('zvmm-'), c)):
        out += ['.TP', ('.BR %s ()' % c) if not c.startswith('zvmm-')
                else '.B %s' % c, ' '.join(sorted(per[c]))]
    return '\n'.join(out) + '\n'


def unit_filter(per, daemon):
    """The unit's SystemCallFilter= lines: both lists, 8 per line."""
    calls = sorted(set().union(*per.values()) | daemon)
    return ''.join('SystemCallFilter=%s\n' % ' '.join(calls[i:i + 8])
                   for i in range(0, len(calls), 8))


def format_list(per):
    order = sorted(per, key=lambda c: (c.startswith('zvmm-'), c))
    lines = [HEADER]
    for c in order:
        lines += ['%s %s' % (c, s) for s in sorted(per[c])]
    return '\n'.join(lines) + '\n'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--tenant')
    ap.add_argument('--zvmmd')
    ap.add_argument('--imports', metavar='LIB')
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument('--write')
    g.add_argument('--check')
    g.add_argument('--man', metavar='LIST')
    g.add_argument('--unit', metavar='LIST')
    a = ap.parse_args()
    if a.man:
        sys.stdout.write(man_table(read_list(a.man)))
        return 0
    if a.unit:
        sys.stdout.write(unit_filter(read_list(a.unit),
                                     read_list(DAEMON).get('zvmmd', set())))
        return 0
    if a.imports:
        return check_imports(a.imports, a.check or a.write,
                             os.path.basename(a.imports) == 'zvmmd')
    if not shutil.which('strace'):
        sys.exit('syscalls: needs strace (make deps)')
    if not a.tenant:
        sys.exit('syscalls: --tenant or --imports')
    per = collect(a.tenant, a.zvmmd)
    if a.write:
        # What code reading found (tools/syscalls.extra) and what was
        # listed before stay: a path this machine did not take is still
        # the library's.
        extra = os.path.join(os.path.dirname(__file__), 'syscalls.extra')
        for src in (extra, a.write):
            if os.path.exists(src):
                for c, calls in read_list(src).items():
                    per.setdefault(c, set()).update(calls)
        daemon = per.pop('zvmmd', set())
        with open(a.write, 'w') as f:
            f.write(format_list(per))
        write_daemon(daemon, per)
        print('syscalls: %s: %d calls and threads, %d system calls' %
              (a.write, len(per), len(set().union(*per.values()))))
        return 0
    have = read_list(a.check)
    bad = 0
    for c in sorted(per):
        miss = per[c] - have.get(c, set())
        if miss:
            bad = 1
            print('syscalls: %s makes %s, not in %s' %
                  (c, ' '.join(sorted(miss)), a.check))
    for c in sorted(have):
        extra = have[c] - per.get(c, set())
        if extra:
            print('syscalls: %s: listed, not seen this time: %s' %
                  (c, ' '.join(sorted(extra))))
    return bad


if __name__ == '__main__':
    sys.exit(main())
