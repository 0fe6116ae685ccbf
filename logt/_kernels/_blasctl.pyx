# cython: language_level=3
"""A one-thread BLAS limit that holds per call, in any thread, without the GIL.

Why this exists. numpy's and scipy's wheels bundle OpenBLAS built with its own
pthreads pool. Its thread count (``blas_cpu_number``) is ONE process-wide
variable, set by ``openblas_set_num_threads``. threadpoolctl (>= 3.8) guards
that setter for pthreads builds: only the first Python thread that sets a
limit (the "controlling thread", usually the main thread) is obeyed; calls
from any other thread are silently ignored while that thread is alive (its
``OpenBLASController.set_num_threads``). logt used ``controller.limit()``,
which never releases control, so after the main thread's first projection
every limit set in a worker thread was a no-op: worker threads ran LAPACK on
two OpenBLAS threads (different rounding, hence different bits, and 4x slower
with 8 Python threads fighting over 2 cores).

What this module does instead. ``logt._threads`` finds each OpenBLAS
(pthreads) library once (with threadpoolctl) and hands the addresses of its
``openblas_get_num_threads`` / ``openblas_set_num_threads`` here. Then
``blas_enter()`` / ``blas_exit()`` are plain C: a mutex-protected,
process-wide nesting count; the first ``enter`` saves each library's count
and sets 1, the last ``exit`` restores the saved counts. The PSD kernel calls
them around its LAPACK work (inside ``nogil``), so the limit holds for every
call wherever it runs, costs ~tens of ns, and cannot be skipped by a
KeyboardInterrupt (no Python code runs between ``enter`` and ``exit``).

The count is process-wide because OpenBLAS's is: while any logt call is
inside LAPACK, BLAS calls made by other threads of the process also run on
one thread.
"""

cdef extern from *:
    """
    #include <pthread.h>

    typedef int (*logt_blas_get_fn)(void);
    typedef void (*logt_blas_set_fn)(int);
    #define LOGT_MAX_BLAS_LIBS 8

    static pthread_mutex_t logt_blas_mu = PTHREAD_MUTEX_INITIALIZER;
    static int logt_blas_nlibs = 0;     /* libraries controlled here */
    static int logt_blas_enabled = 0;   /* 0: enter/exit are no-ops */
    static long logt_blas_depth = 0;    /* active enter()s, all threads */
    static long logt_blas_sets = 0;     /* times the limit was applied (tests) */
    static logt_blas_get_fn logt_blas_get[LOGT_MAX_BLAS_LIBS];
    static logt_blas_set_fn logt_blas_set[LOGT_MAX_BLAS_LIBS];
    static int logt_blas_saved[LOGT_MAX_BLAS_LIBS];

    /* A fork while another thread held the mutex would leave it locked in
       the child (which has only the forking thread): re-initialize it. */
    static void logt_blas_atfork_child(void) {
        pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
        logt_blas_mu = fresh;
    }

    static int logt_blas_install_atfork(void) {
        return pthread_atfork(NULL, NULL, logt_blas_atfork_child);
    }

    /* Returns a token for logt_blas_exit: 1 if this call counted. */
    static int logt_blas_enter(void) {
        int i;
        pthread_mutex_lock(&logt_blas_mu);
        if (!logt_blas_enabled) {
            pthread_mutex_unlock(&logt_blas_mu);
            return 0;
        }
        if (logt_blas_depth++ == 0) {
            for (i = 0; i < logt_blas_nlibs; i++) {
                logt_blas_saved[i] = logt_blas_get[i]();
                if (logt_blas_saved[i] != 1) {
                    logt_blas_set[i](1);
                }
            }
            logt_blas_sets++;
        }
        pthread_mutex_unlock(&logt_blas_mu);
        return 1;
    }

    static void logt_blas_exit(int token) {
        int i;
        if (!token) {
            return;
        }
        pthread_mutex_lock(&logt_blas_mu);
        if (logt_blas_depth > 0 && --logt_blas_depth == 0) {
            for (i = 0; i < logt_blas_nlibs; i++) {
                if (logt_blas_saved[i] != 1 && logt_blas_saved[i] > 0) {
                    logt_blas_set[i](logt_blas_saved[i]);
                }
            }
        }
        pthread_mutex_unlock(&logt_blas_mu);
    }

    /* Replace the controlled libraries; refused (-1) while a block is active. */
    static int logt_blas_configure(int n, const size_t *get, const size_t *set) {
        int i, ok = 0;
        pthread_mutex_lock(&logt_blas_mu);
        if (logt_blas_depth != 0 || n > LOGT_MAX_BLAS_LIBS) {
            ok = -1;
        } else {
            for (i = 0; i < n; i++) {
                logt_blas_get[i] = (logt_blas_get_fn)get[i];
                logt_blas_set[i] = (logt_blas_set_fn)set[i];
            }
            logt_blas_nlibs = n;
        }
        pthread_mutex_unlock(&logt_blas_mu);
        return ok;
    }

    static void logt_blas_set_enabled(int on) {
        pthread_mutex_lock(&logt_blas_mu);
        logt_blas_enabled = on;
        pthread_mutex_unlock(&logt_blas_mu);
    }

    static long logt_blas_get_depth(void) {
        long d;
        pthread_mutex_lock(&logt_blas_mu);
        d = logt_blas_depth;
        pthread_mutex_unlock(&logt_blas_mu);
        return d;
    }
    """
    int LOGT_MAX_BLAS_LIBS
    int logt_blas_enabled
    long logt_blas_sets
    void logt_blas_set_enabled(int on) nogil
    int logt_blas_install_atfork() nogil
    int logt_blas_enter() nogil
    void logt_blas_exit(int token) nogil
    int logt_blas_configure(int n, const size_t* get, const size_t* set) nogil
    long logt_blas_get_depth() nogil


if logt_blas_install_atfork() != 0:
    raise ImportError("logt._kernels._blasctl: pthread_atfork failed")


cdef int blas_enter() noexcept nogil:
    return logt_blas_enter()


cdef void blas_exit(int token) noexcept nogil:
    logt_blas_exit(token)


def configure(entries):
    """Control these libraries: a list of ``(get_address, set_address)`` pairs,
    the C addresses of ``int openblas_get_num_threads(void)`` and
    ``void openblas_set_num_threads(int)`` of each library. Raises
    RuntimeError while a limited block is active."""
    cdef size_t gets[8]
    cdef size_t sets[8]
    entries = list(entries)
    if len(entries) > LOGT_MAX_BLAS_LIBS:
        entries = entries[:LOGT_MAX_BLAS_LIBS]
    cdef int i, n = len(entries)
    for i in range(n):
        g, s = entries[i]
        if not g or not s:
            raise ValueError("configure: null function address")
        gets[i] = <size_t>g
        sets[i] = <size_t>s
    if logt_blas_configure(n, gets, sets) != 0:
        raise RuntimeError("cannot reconfigure BLAS control while a limited block is active")


def set_enabled(bint on):
    """Turn the limit on or off for blocks entered from now on."""
    logt_blas_set_enabled(1 if on else 0)


def enabled():
    return bool(logt_blas_enabled)


def depth():
    """Number of limited blocks active in the process (all threads)."""
    return logt_blas_get_depth()


def n_applied():
    """How many times the limit was applied (0 -> 1 transitions); for tests."""
    return logt_blas_sets


cdef class Limit:
    """Context manager: the one-thread limit for the block (nests, any thread).

    ``__enter__``/``__exit__`` are compiled: no Python bytecode runs between
    restoring and returning, so a KeyboardInterrupt cannot skip the restore.
    ``fallback`` is an optional object with ``enter()``/``exit()`` for the
    libraries controlled from Python (not OpenBLAS with pthreads).
    """
    cdef int token
    cdef bint entered
    cdef object fallback
    cdef bint fb_entered

    def __cinit__(self, fallback=None):
        self.token = 0
        self.entered = False
        self.fallback = fallback
        self.fb_entered = False

    def __enter__(self):
        if self.entered:
            raise RuntimeError("this limit block is already active")
        self.token = logt_blas_enter()
        self.entered = True
        if self.fallback is not None:
            self.fallback.enter()
            self.fb_entered = True
        return self

    def __exit__(self, exc_type, exc, tb):
        cdef int tok = self.token
        self.token = 0
        self.entered = False
        logt_blas_exit(tok)
        if self.fb_entered:
            self.fb_entered = False
            self.fallback.exit()
        return False
