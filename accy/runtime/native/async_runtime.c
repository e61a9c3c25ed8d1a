/*
 * async_runtime.c: accy's implementation of the MLIR async runtime ABI.
 *
 * The CPU target runs its parallel loops (`scf.parallel`) through upstream
 * MLIR's `async-parallel-for`, `async-to-async-runtime` and
 * `convert-async-to-llvm`, which turn them into LLVM coroutines and calls to a
 * fixed set of C functions named `mlirAsyncRuntime*`. Upstream implements them
 * in mlir/lib/ExecutionEngine/AsyncRuntime.cpp (libmlir_async_runtime.so, which
 * no Python wheel ships); this file implements the same functions with the
 * same C signatures and the same reference-counting contract, so the JIT-ed
 * code calls into it unchanged.
 *
 * Objects. A token, a value and a group are reference counted. A token and a
 * value start with two references (one for the code that awaits it, one for
 * the task that will emplace it; emplacing drops the task's), a group with
 * one; the last `mlirAsyncRuntimeDropRef` frees the object. Each object has a
 * state (unavailable, then available or error, final), a mutex and a list of
 * awaiters: callbacks run, in the order they were added, by the thread that
 * makes the object ready. Blocking awaits sleep on the pool's condition
 * variable (see await_object).
 *
 * Threads. One process-wide pool of worker threads runs the tasks queued by
 * `mlirAsyncRuntimeExecute` (a coroutine handle and its resume function),
 * first in, first out. It holds `mlirAsyncRuntimGetNumWorkerThreads() - 1` workers:
 * a thread blocked in `mlirAsyncRuntimeAwait*` runs queued tasks itself
 * while it waits, so the thread that started a parallel loop is the pool's
 * last worker and nothing waits on an idle core. The number of threads is
 * the value of ACCY_NUM_THREADS when set (at least 1), else the number of
 * CPUs this process may run on; `accy_async_runtime_reserve(n)` raises it
 * (never lowers it) for code compiled for `n` threads. A worker whose queue is
 * empty, and an awaiting thread whose object is not ready, first poll for up to
 * SPIN_NS (a parallel loop's next kernel is usually queued within microseconds,
 * sooner than a sleeping thread wakes), then sleep on a condition variable;
 * workers live until the process exits. A process forked from one with a pool starts its own workers on its
 * first task.
 *
 * Invariants:
 *  - a group's `pending` counts the tokens added to it that are not ready
 *    plus the slots not yet filled (`size - added`); it reaches zero exactly
 *    once, when the last awaited token is ready;
 *  - awaiters of an object run exactly once, after its state became final,
 *    outside of any lock of another object;
 *  - tasks are never dropped: the queue only grows under its mutex and
 *    shrinks when a worker or an awaiting thread takes a task to run it.
 */
#define _GNU_SOURCE

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ACCY_EXPORT __attribute__((visibility("default")))

static const char THREADS_VARIABLE[] = "ACCY_NUM_THREADS";

typedef void (*CoroResume)(void *);

/* Nanoseconds an idle thread polls for work before it sleeps. */
static const long SPIN_NS = 50000;

/*===----------------------------------------------------------------------===
  Awaiters and reference-counted objects
 *===----------------------------------------------------------------------===*/

typedef struct Awaiter {
  void (*run)(struct Awaiter *);
  struct Awaiter *next;
  /* An awaiter resumes a coroutine or signals a group. */
  void *handle;
  CoroResume resume;
  struct AsyncGroup *group;
  struct AsyncToken *token;
} Awaiter;

enum State { UNAVAILABLE = 0, AVAILABLE = 1, ERROR = 2 };

typedef struct Object {
  atomic_llong references;
  void (*destroy)(struct Object *);
  atomic_int state; /* enum State; groups use it for "every token ready" */
  pthread_mutex_t mutex;
  Awaiter *awaiters, *last_awaiter;
} Object;

typedef struct AsyncToken {
  Object object;
} AsyncToken;

typedef struct AsyncValue {
  Object object;
  void *storage;
} AsyncValue;

typedef struct AsyncGroup {
  Object object;
  atomic_llong pending;
  atomic_llong errors;
  atomic_llong rank;
} AsyncGroup;

static void *checked_calloc(size_t count, size_t size) {
  void *p = calloc(count, size);
  if (!p) {
    fprintf(stderr, "accy async runtime: out of memory\n");
    abort();
  }
  return p;
}

static void object_init(Object *o, long long references, void (*destroy)(Object *)) {
  atomic_init(&o->references, references);
  o->destroy = destroy;
  atomic_init(&o->state, UNAVAILABLE);
  pthread_mutex_init(&o->mutex, NULL);
  o->awaiters = o->last_awaiter = NULL;
}

static void object_fini(Object *o) {
  pthread_mutex_destroy(&o->mutex);
}

static void destroy_token(Object *o) {
  object_fini(o);
  free(o);
}

static void destroy_value(Object *o) {
  object_fini(o);
  free(((AsyncValue *)o)->storage);
  free(o);
}

static void destroy_group(Object *o) { destroy_token(o); }

static void add_ref(Object *o, long long count) {
  atomic_fetch_add(&o->references, count);
}

static void drop_ref(Object *o, long long count) {
  long long before = atomic_fetch_sub(&o->references, count);
  if (before < count) {
    fprintf(stderr, "accy async runtime: reference count below zero\n");
    abort();
  }
  if (before == count)
    o->destroy(o);
}

/* Queue `a` on `o` unless `o` is already final; returns whether it queued.
   Caller holds o->mutex. */
static bool enqueue_awaiter(Object *o, Awaiter *a) {
  if (atomic_load(&o->state) != UNAVAILABLE)
    return false;
  a->next = NULL;
  if (o->last_awaiter)
    o->last_awaiter->next = a;
  else
    o->awaiters = a;
  o->last_awaiter = a;
  return true;
}

static void wake_awaiters(void);

/* Make `o` final, wake the threads blocked awaiting anything, and run its
   awaiters (outside its lock). */
static void set_state(Object *o, int state) {
  pthread_mutex_lock(&o->mutex);
  if (atomic_load(&o->state) != UNAVAILABLE) {
    pthread_mutex_unlock(&o->mutex);
    fprintf(stderr, "accy async runtime: an async object became ready twice\n");
    abort();
  }
  atomic_store(&o->state, state);
  Awaiter *a = o->awaiters;
  o->awaiters = o->last_awaiter = NULL;
  pthread_mutex_unlock(&o->mutex);
  wake_awaiters();
  while (a) {
    Awaiter *next = a->next;
    a->run(a);
    a = next;
  }
}

/*===----------------------------------------------------------------------===
  The thread pool
 *===----------------------------------------------------------------------===*/

typedef struct Task {
  void *handle;
  CoroResume resume;
  struct Task *next;
} Task;

static struct {
  pthread_mutex_t mutex;
  pthread_cond_t work; /* a task was queued */
  Task *head, *tail;
  int workers;         /* worker threads started */
  int threads;         /* workers + the awaiting thread */
  int sleeping_awaiters; /* threads blocked in await_object */
  pthread_once_t once;
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, NULL, 0, 1, 0,
          PTHREAD_ONCE_INIT};

/* Take the oldest task, or NULL. Caller holds pool.mutex. */
static Task *pop_task(void) {
  Task *t = pool.head;
  if (t) {
    __atomic_store_n(&pool.head, t->next, __ATOMIC_RELEASE);
    if (!pool.head)
      pool.tail = NULL;
  }
  return t;
}

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __asm__ volatile("pause");
#endif
}

/* Poll, without the pool's lock, until a task is queued or `ready` (if given) is no
   longer UNAVAILABLE, for at most SPIN_NS; whether either happened. */
static bool poll_for_work(atomic_int *ready) {
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    for (int i = 0; i < 64; i++) {
      if (__atomic_load_n(&pool.head, __ATOMIC_ACQUIRE) != NULL)
        return true;
      if (ready && atomic_load(ready) != UNAVAILABLE)
        return true;
      cpu_relax();
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    long elapsed = (now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec);
    if (elapsed >= SPIN_NS)
      return false;
  }
}

static void run_task(Task *t) {
  void *handle = t->handle;
  CoroResume resume = t->resume;
  free(t);
  resume(handle);
}

static void *worker_main(void *unused) {
  (void)unused;
  for (;;) {
    poll_for_work(NULL);
    pthread_mutex_lock(&pool.mutex);
    Task *t;
    while (!(t = pop_task()))
      pthread_cond_wait(&pool.work, &pool.mutex);
    pthread_mutex_unlock(&pool.mutex);
    run_task(t);
  }
  return NULL;
}

static int default_threads(void) {
  const char *text = getenv(THREADS_VARIABLE);
  if (text && *text) {
    long n = strtol(text, NULL, 10);
    return n < 1 ? 1 : (n > 1024 ? 1024 : (int)n);
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : (int)n;
}

/* Start workers until there are `threads - 1`; `pool.threads` becomes the number of
   threads that run tasks. If a thread cannot start, says so once and carries on with the
   workers it has (the awaiting thread still runs every task). Caller holds pool.mutex. */
static void grow_pool(int threads) {
  if (threads > pool.threads)
    pool.threads = threads;
  while (pool.workers < pool.threads - 1) {
    pthread_t thread;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&thread, &attr, worker_main, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
      fprintf(stderr, "accy async runtime: cannot start a worker thread (%s); running on %d\n",
              strerror(rc), pool.workers + 1);
      pool.threads = pool.workers + 1;
      return;
    }
    pool.workers++;
  }
}

/* A state became final: threads blocked in await_object re-check theirs. */
static void wake_awaiters(void) {
  pthread_mutex_lock(&pool.mutex);
  if (pool.sleeping_awaiters)
    pthread_cond_broadcast(&pool.work);
  pthread_mutex_unlock(&pool.mutex);
}

/* fork(): the child has only the forking thread. The pool's lock is held across the
   fork so the child's copy is consistent; the child forgets the parent's workers (it
   starts its own on its first task) and its queue (tasks of the parent's loops). */
static void before_fork(void) { pthread_mutex_lock(&pool.mutex); }

static void after_fork_in_parent(void) { pthread_mutex_unlock(&pool.mutex); }

static void after_fork_in_child(void) {
  pthread_mutex_init(&pool.mutex, NULL);
  pthread_cond_init(&pool.work, NULL);
  pool.head = pool.tail = NULL;
  pool.workers = 0;
  pool.sleeping_awaiters = 0;
}

static void init_pool(void) {
  pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
  pthread_mutex_lock(&pool.mutex);
  grow_pool(default_threads());
  pthread_mutex_unlock(&pool.mutex);
}

static void ensure_pool(void) { pthread_once(&pool.once, init_pool); }

static void submit(void *handle, CoroResume resume) {
  ensure_pool();
  Task *t = checked_calloc(1, sizeof *t);
  t->handle = handle;
  t->resume = resume;
  pthread_mutex_lock(&pool.mutex);
  grow_pool(pool.threads); /* no-op, except in a forked child's first task */
  if (pool.tail)
    pool.tail->next = t;
  else
    __atomic_store_n(&pool.head, t, __ATOMIC_RELEASE);
  pool.tail = t;
  pthread_cond_signal(&pool.work);
  pthread_mutex_unlock(&pool.mutex);
}

/* Block until `o` is final, running queued tasks meanwhile. Sleeps on the
   pool's condition variable, which both a new task and a final state signal. */
static void await_object(Object *o) {
  ensure_pool();
  pthread_mutex_lock(&pool.mutex);
  while (atomic_load(&o->state) == UNAVAILABLE) {
    Task *t = pop_task();
    if (t) {
      pthread_mutex_unlock(&pool.mutex);
      run_task(t);
      pthread_mutex_lock(&pool.mutex);
      continue;
    }
    pthread_mutex_unlock(&pool.mutex);
    bool woken = poll_for_work(&o->state);
    pthread_mutex_lock(&pool.mutex);
    if (woken || atomic_load(&o->state) != UNAVAILABLE || pool.head)
      continue;
    pool.sleeping_awaiters++;
    pthread_cond_wait(&pool.work, &pool.mutex);
    pool.sleeping_awaiters--;
  }
  pthread_mutex_unlock(&pool.mutex);
}

/*===----------------------------------------------------------------------===
  The ABI (names and signatures of mlir/ExecutionEngine/AsyncRuntime.h)
 *===----------------------------------------------------------------------===*/

ACCY_EXPORT void mlirAsyncRuntimeAddRef(void *object, int64_t count) {
  add_ref((Object *)object, count);
}

ACCY_EXPORT void mlirAsyncRuntimeDropRef(void *object, int64_t count) {
  drop_ref((Object *)object, count);
}

ACCY_EXPORT AsyncToken *mlirAsyncRuntimeCreateToken(void) {
  AsyncToken *token = checked_calloc(1, sizeof *token);
  object_init(&token->object, 2, destroy_token);
  return token;
}

ACCY_EXPORT AsyncValue *mlirAsyncRuntimeCreateValue(int64_t size) {
  AsyncValue *value = checked_calloc(1, sizeof *value);
  object_init(&value->object, 2, destroy_value);
  value->storage = checked_calloc(1, size > 0 ? (size_t)size : 1);
  return value;
}

ACCY_EXPORT AsyncGroup *mlirAsyncRuntimeCreateGroup(int64_t size) {
  AsyncGroup *group = checked_calloc(1, sizeof *group);
  object_init(&group->object, 1, destroy_group);
  atomic_init(&group->pending, size);
  atomic_init(&group->errors, 0);
  atomic_init(&group->rank, 0);
  if (size == 0)
    atomic_store(&group->object.state, AVAILABLE);
  return group;
}

/* One token of `group` is ready. */
static void group_token_ready(AsyncGroup *group, bool error) {
  if (error)
    atomic_fetch_add(&group->errors, 1);
  long long before = atomic_fetch_sub(&group->pending, 1);
  if (before <= 0) {
    fprintf(stderr, "accy async runtime: more tokens than the group's size\n");
    abort();
  }
  if (before == 1)
    set_state(&group->object, AVAILABLE);
}

static void run_group_awaiter(Awaiter *a) {
  AsyncGroup *group = a->group;
  bool error = atomic_load(&a->token->object.state) == ERROR;
  free(a);
  group_token_ready(group, error);
  drop_ref(&group->object, 1);
}

ACCY_EXPORT int64_t mlirAsyncRuntimeAddTokenToGroup(AsyncToken *token, AsyncGroup *group) {
  int64_t rank = atomic_fetch_add(&group->rank, 1);
  Awaiter *a = checked_calloc(1, sizeof *a);
  a->run = run_group_awaiter;
  a->group = group;
  a->token = token;
  add_ref(&group->object, 1); /* kept alive until the token is ready */
  pthread_mutex_lock(&token->object.mutex);
  bool queued = enqueue_awaiter(&token->object, a);
  pthread_mutex_unlock(&token->object.mutex);
  if (!queued)
    run_group_awaiter(a);
  return rank;
}

ACCY_EXPORT void mlirAsyncRuntimeEmplaceToken(AsyncToken *token) {
  set_state(&token->object, AVAILABLE);
  drop_ref(&token->object, 1); /* the emplacing task's reference */
}

ACCY_EXPORT void mlirAsyncRuntimeEmplaceValue(AsyncValue *value) {
  set_state(&value->object, AVAILABLE);
  drop_ref(&value->object, 1);
}

ACCY_EXPORT void mlirAsyncRuntimeSetTokenError(AsyncToken *token) {
  set_state(&token->object, ERROR);
  drop_ref(&token->object, 1);
}

ACCY_EXPORT void mlirAsyncRuntimeSetValueError(AsyncValue *value) {
  set_state(&value->object, ERROR);
  drop_ref(&value->object, 1);
}

ACCY_EXPORT bool mlirAsyncRuntimeIsTokenError(AsyncToken *token) {
  return atomic_load(&token->object.state) == ERROR;
}

ACCY_EXPORT bool mlirAsyncRuntimeIsValueError(AsyncValue *value) {
  return atomic_load(&value->object.state) == ERROR;
}

ACCY_EXPORT bool mlirAsyncRuntimeIsGroupError(AsyncGroup *group) {
  return atomic_load(&group->errors) > 0;
}

ACCY_EXPORT void mlirAsyncRuntimeAwaitToken(AsyncToken *token) { await_object(&token->object); }

ACCY_EXPORT void mlirAsyncRuntimeAwaitValue(AsyncValue *value) { await_object(&value->object); }

ACCY_EXPORT void mlirAsyncRuntimeAwaitAllInGroup(AsyncGroup *group) {
  await_object(&group->object);
}

ACCY_EXPORT void *mlirAsyncRuntimeGetValueStorage(AsyncValue *value) { return value->storage; }

ACCY_EXPORT void mlirAsyncRuntimeExecute(void *handle, CoroResume resume) {
  submit(handle, resume);
}

static void run_resume_awaiter(Awaiter *a) {
  void *handle = a->handle;
  CoroResume resume = a->resume;
  free(a);
  resume(handle);
}

/* Resume (handle, resume) once `o` is final: now, or by the thread that makes it so. */
static void await_and_execute(Object *o, void *handle, CoroResume resume) {
  Awaiter *a = checked_calloc(1, sizeof *a);
  a->run = run_resume_awaiter;
  a->handle = handle;
  a->resume = resume;
  pthread_mutex_lock(&o->mutex);
  bool queued = enqueue_awaiter(o, a);
  pthread_mutex_unlock(&o->mutex);
  if (!queued)
    run_resume_awaiter(a);
}

ACCY_EXPORT void mlirAsyncRuntimeAwaitTokenAndExecute(AsyncToken *token, void *handle,
                                                      CoroResume resume) {
  await_and_execute(&token->object, handle, resume);
}

ACCY_EXPORT void mlirAsyncRuntimeAwaitValueAndExecute(AsyncValue *value, void *handle,
                                                      CoroResume resume) {
  await_and_execute(&value->object, handle, resume);
}

ACCY_EXPORT void mlirAsyncRuntimeAwaitAllInGroupAndExecute(AsyncGroup *group, void *handle,
                                                           CoroResume resume) {
  await_and_execute(&group->object, handle, resume);
}

/* The misspelling is upstream's: `convert-async-to-llvm` calls this name. */
ACCY_EXPORT int64_t mlirAsyncRuntimGetNumWorkerThreads(void) {
  ensure_pool();
  pthread_mutex_lock(&pool.mutex);
  int threads = pool.threads;
  pthread_mutex_unlock(&pool.mutex);
  return threads;
}

ACCY_EXPORT void mlirAsyncRuntimePrintCurrentThreadId(void) {
  printf("Current thread id: %lu\n", (unsigned long)pthread_self());
  fflush(stdout);
}

/*===----------------------------------------------------------------------===
  accy's additions
 *===----------------------------------------------------------------------===*/

/* Make sure `threads` threads can run tasks (starts workers; never stops any).
   Returns the number of threads now available. */
ACCY_EXPORT int accy_async_runtime_reserve(int threads) {
  ensure_pool();
  pthread_mutex_lock(&pool.mutex);
  grow_pool(threads);
  int now = pool.threads;
  pthread_mutex_unlock(&pool.mutex);
  return now;
}
