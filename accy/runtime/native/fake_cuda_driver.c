/*
 * fake_cuda_driver.c: fake CUDA driver for tests; runs no kernel.
 *
 * A test double of libcuda.so.1, built as libaccy_fake_cuda.so. It exports the
 * driver entry points that accy's runtime (mgpu_runtime.c) uses, with the
 * driver's signatures (cuda_driver.h), so pointing ACCY_CUDA_DRIVER at this
 * library runs compiled host code on a machine without a GPU:
 *
 *  - Device memory is host memory, in a reserved address range of its own
 *    (the "arena"), so a pointer is classified exactly as device or host,
 *    like a real driver does with unified addressing. Each allocation is
 *    page-aligned and followed by an inaccessible guard page; freed memory is
 *    made inaccessible and its addresses are not reused until
 *    fake_cuda_reset(), so a host access to freed device memory faults.
 *  - Copies and memsets are performed at once (every stream is synchronous).
 *  - Modules keep a copy of their image. For PTX images the `.entry`
 *    declarations are parsed, so cuModuleGetFunction knows which kernels
 *    exist and cuLaunchKernel knows each kernel's parameter sizes.
 *  - cuLaunchKernel validates and records the launch and runs nothing.
 *
 * Inspection, for tests (all C functions, callable through ctypes):
 *  - a call log: one line per driver call, e.g. `alloc ptr=0x... bytes=256`,
 *    `memcpy_htod dst=0x... src=0x... bytes=48`,
 *    `launch name=k grid=1,1,1 block=256,1,1 smem=0 stream=0x0 params=2
 *    args=0x...,0x...`, `free ptr=0x...` (fake_cuda_event_count/fake_cuda_event;
 *    an "event" here is a log entry, not a CUevent);
 *  - an error log of misuse the fake detected: copies, memsets and launches
 *    touching freed or never-allocated device memory or running past an
 *    allocation, double or invalid frees, calls without a current context,
 *    invalid handles, and leaks found by fake_cuda_check_leaks()
 *    (fake_cuda_error_count/fake_cuda_error).
 *
 * Failure injection: fake_cuda_fail_next("cuMemAlloc_v2", 2) makes the next
 * call of that entry point return that code; fake_cuda_set_device_memory_limit
 * caps live device memory. The environment variables ACCY_FAKE_CUDA_FAIL
 * ("cuMemAlloc_v2=2,cuLaunchKernel=719"), ACCY_FAKE_CUDA_MEMORY_LIMIT
 * (bytes) set the same when the library loads and at fake_cuda_reset();
 * ACCY_FAKE_CUDA_ZERO_READBACK=1 makes device-to-host copies deliver zeros.
 *
 * The fake models one device (ordinal 0) like an H200: 132 multiprocessors,
 * compute capability 9.0, 48 KiB of dynamic shared memory per block by
 * default and 227 KiB after opting in. All state is behind one mutex.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE */

#include <ctype.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cuda_driver.h"

#define FAKE_EXPORT __attribute__((visibility("default")))

/* Every driver entry point is defined below with the prototype the runtime
   calls it through. */
#define DECLARE_DRIVER_FUNCTION(symbol, result, parameters)                    \
  FAKE_EXPORT result symbol parameters;
ACCY_CUDA_DRIVER_FUNCTIONS(DECLARE_DRIVER_FUNCTION)
#undef DECLARE_DRIVER_FUNCTION

/* The modelled device. */
enum {
  DEVICE_MULTIPROCESSORS = 132,
  DEVICE_DEFAULT_DYNAMIC_SHARED_BYTES = 48 * 1024,
  DEVICE_OPTIN_SHARED_BYTES = 227 * 1024,
  DEVICE_MAX_THREADS_PER_BLOCK = 1024,
};

/*===----------------------------------------------------------------------===
  Error codes
  ===----------------------------------------------------------------------===*/

static const struct {
  CUresult code;
  const char *name;
  const char *description;
} ERROR_CODES[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED",
     "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE",
     "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE",
     "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE",
     "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT",
     "invalid device context"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX",
     "a PTX JIT compilation failed"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE",
     "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
     "too many resources requested for launch"},
    {CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
     "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
     "part or all of the requested memory range is already mapped"},
    {CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
     "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
     "pointer does not correspond to a registered memory region"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED",
     "unspecified launch failure"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED",
     "operation not supported"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static int error_code_index(CUresult code) {
  for (size_t i = 0; i < sizeof ERROR_CODES / sizeof ERROR_CODES[0]; ++i)
    if (ERROR_CODES[i].code == code)
      return (int)i;
  return -1;
}

static const char *error_name(CUresult code) {
  int index = error_code_index(code);
  return index < 0 ? "CUDA_ERROR_<unmodelled>" : ERROR_CODES[index].name;
}

CUresult cuGetErrorName(CUresult error, const char **name) {
  int index = error_code_index(error);
  if (!name)
    return CUDA_ERROR_INVALID_VALUE;
  *name = index < 0 ? NULL : ERROR_CODES[index].name;
  return index < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult error, const char **text) {
  int index = error_code_index(error);
  if (!text)
    return CUDA_ERROR_INVALID_VALUE;
  *text = index < 0 ? NULL : ERROR_CODES[index].description;
  return index < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

/*===----------------------------------------------------------------------===
  Logs
  ===----------------------------------------------------------------------===*/

typedef struct {
  char **lines;
  int count;
  int capacity;
} LineLog;

static pthread_mutex_t fake_mutex = PTHREAD_MUTEX_INITIALIZER;
static LineLog call_log;  /* one line per driver call */
static LineLog error_log; /* misuse detected */

static char *format_line(const char *format, va_list arguments) {
  va_list measuring;
  va_copy(measuring, arguments);
  int length = vsnprintf(NULL, 0, format, measuring);
  va_end(measuring);
  if (length < 0)
    return NULL;
  char *line = malloc((size_t)length + 1);
  if (line)
    vsnprintf(line, (size_t)length + 1, format, arguments);
  return line;
}

static void log_append(LineLog *log, char *line) {
  if (!line)
    return;
  if (log->count == log->capacity) {
    int capacity = log->capacity ? 2 * log->capacity : 64;
    char **lines = realloc(log->lines, (size_t)capacity * sizeof *lines);
    if (!lines) {
      free(line);
      return;
    }
    log->lines = lines;
    log->capacity = capacity;
  }
  log->lines[log->count++] = line;
}

static void log_clear(LineLog *log) {
  for (int i = 0; i < log->count; ++i)
    free(log->lines[i]);
  free(log->lines);
  *log = (LineLog){0};
}

/* Copies line `index` into `buffer` (truncated, NUL-terminated); returns its
   full length, or -1 when there is no such line. */
static int log_copy(const LineLog *log, int index, char *buffer,
                    size_t length) {
  if (index < 0 || index >= log->count)
    return -1;
  const char *line = log->lines[index];
  if (buffer && length)
    snprintf(buffer, length, "%s", line);
  return (int)strlen(line);
}

__attribute__((format(printf, 1, 2))) static void record_call(const char *format,
                                                              ...) {
  va_list arguments;
  va_start(arguments, format);
  log_append(&call_log, format_line(format, arguments));
  va_end(arguments);
}

__attribute__((format(printf, 1, 2))) static void
record_misuse(const char *format, ...) {
  va_list arguments;
  va_start(arguments, format);
  log_append(&error_log, format_line(format, arguments));
  va_end(arguments);
}

/*===----------------------------------------------------------------------===
  Failure injection and configuration
  ===----------------------------------------------------------------------===*/

enum { MAX_PENDING_FAILURES = 32, CALL_NAME_CAPACITY = 64 };

static struct {
  char call[CALL_NAME_CAPACITY];
  CUresult code;
} pending_failures[MAX_PENDING_FAILURES];
static int pending_failure_count;
static unsigned long long device_memory_limit = ULLONG_MAX;

static void add_pending_failure(const char *call, size_t call_length,
                                CUresult code) {
  if (pending_failure_count == MAX_PENDING_FAILURES ||
      call_length >= CALL_NAME_CAPACITY)
    return;
  memcpy(pending_failures[pending_failure_count].call, call, call_length);
  pending_failures[pending_failure_count].call[call_length] = '\0';
  pending_failures[pending_failure_count].code = code;
  ++pending_failure_count;
}

/* Removes and returns the first failure queued for `call`, or CUDA_SUCCESS. */
static CUresult take_pending_failure(const char *call) {
  for (int i = 0; i < pending_failure_count; ++i) {
    if (strcmp(pending_failures[i].call, call) != 0)
      continue;
    CUresult code = pending_failures[i].code;
    memmove(&pending_failures[i], &pending_failures[i + 1],
            (size_t)(pending_failure_count - i - 1) * sizeof pending_failures[0]);
    --pending_failure_count;
    return code;
  }
  return CUDA_SUCCESS;
}

/* Device-to-host copies deliver zero bytes (ACCY_FAKE_CUDA_ZERO_READBACK=1): no
   kernel runs, so what a copy back would carry is meaningless anyway; with zeros a
   data-dependent loop's condition, read back each iteration, is false at once. */
static bool zero_readback;

/* Reads ACCY_FAKE_CUDA_FAIL ("call=code,call=code"), ACCY_FAKE_CUDA_MEMORY_LIMIT
   (bytes) and ACCY_FAKE_CUDA_ZERO_READBACK. */
static void configure_from_environment(void) {
  pending_failure_count = 0;
  device_memory_limit = ULLONG_MAX;
  const char *zero = getenv("ACCY_FAKE_CUDA_ZERO_READBACK");
  zero_readback = zero && *zero && *zero != '0';
  const char *limit = getenv("ACCY_FAKE_CUDA_MEMORY_LIMIT");
  if (limit && *limit)
    device_memory_limit = strtoull(limit, NULL, 0);
  const char *failures = getenv("ACCY_FAKE_CUDA_FAIL");
  for (const char *item = failures; item && *item;) {
    const char *end = strchr(item, ',');
    size_t item_length = end ? (size_t)(end - item) : strlen(item);
    const char *equals = memchr(item, '=', item_length);
    if (equals)
      add_pending_failure(item, (size_t)(equals - item),
                          (CUresult)strtol(equals + 1, NULL, 0));
    item = end ? end + 1 : NULL;
  }
}

/*===----------------------------------------------------------------------===
  Driver state
  ===----------------------------------------------------------------------===*/

struct CUctx_st {
  CUdevice device;
};

typedef enum { IMAGE_PTX, IMAGE_CUBIN, IMAGE_FATBIN } ImageFormat;

static const char *const IMAGE_FORMAT_NAMES[] = {"ptx", "cubin", "fatbin"};

struct CUfunc_st {
  CUmodule module;
  char *name;
  int parameter_count; /* -1: unknown (the image is not PTX) */
  size_t *parameter_sizes;
  int max_dynamic_shared_bytes;
  struct CUfunc_st *next;
};

/* A kernel declared by a PTX `.entry`. */
typedef struct {
  char *name;
  int parameter_count;
  size_t *parameter_sizes;
} KernelDeclaration;

struct CUmod_st {
  bool loaded;
  ImageFormat format;
  unsigned char *image; /* a copy of the loaded bytes */
  size_t image_bytes;
  KernelDeclaration *kernels; /* PTX only */
  int kernel_count;
  struct CUfunc_st *functions;
  struct CUmod_st *next;
};

struct CUstream_st {
  bool live;
  struct CUstream_st *next;
};

struct CUevent_st {
  bool live;
  bool recorded;
  struct CUevent_st *next;
};

typedef struct {
  uintptr_t address;
  size_t bytes;        /* as requested */
  size_t mapped_bytes; /* rounded up to pages */
  bool live;
  bool managed;
  int allocated_by; /* index of the call-log line */
  int freed_by;     /* -1 while live */
} Allocation;

typedef struct HostRegistration {
  void *pointer;
  size_t bytes;
  struct HostRegistration *next;
} HostRegistration;

static bool driver_initialized;
static struct CUctx_st primary_context = {0};
static int primary_context_retains;
static _Thread_local CUcontext current_context;

static struct CUmod_st *modules;
static struct CUstream_st *streams;
static struct CUevent_st *events;
static HostRegistration *host_registrations;

/* Device memory: [arena_base, arena_base + arena_bytes) is reserved
   inaccessible; allocations are carved from arena_next upward, so the
   allocation table is sorted by address. */
static uintptr_t arena_base;
static size_t arena_bytes;
static uintptr_t arena_next;
static size_t page_bytes;
static Allocation *allocations;
static int allocation_count;
static int allocation_capacity;
static unsigned long long live_device_bytes;

static bool reserve_arena(void) {
  if (arena_base)
    return true;
  page_bytes = (size_t)sysconf(_SC_PAGESIZE);
  /* Address space only (MAP_NORESERVE, PROT_NONE): try 64 GiB, settle for
     less where the address space is limited. */
  for (size_t bytes = (size_t)64 << 30; bytes >= ((size_t)1 << 30);
       bytes /= 2) {
    void *base = mmap(NULL, bytes, PROT_NONE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base != MAP_FAILED) {
      arena_base = arena_next = (uintptr_t)base;
      arena_bytes = bytes;
      return true;
    }
  }
  return false;
}

/* Discards the contents of [address, address + bytes) and makes it
   inaccessible again. */
static void make_inaccessible(uintptr_t address, size_t bytes) {
  if (bytes)
    mmap((void *)address, bytes, PROT_NONE,
         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
}

static bool in_arena(uintptr_t address) {
  return arena_base && address >= arena_base &&
         address < arena_base + arena_bytes;
}

/* The allocation with the greatest address <= `address`, or NULL. */
static Allocation *allocation_at_or_below(uintptr_t address) {
  int low = 0, high = allocation_count - 1, found = -1;
  while (low <= high) {
    int middle = low + (high - low) / 2;
    if (allocations[middle].address <= address) {
      found = middle;
      low = middle + 1;
    } else {
      high = middle - 1;
    }
  }
  return found < 0 ? NULL : &allocations[found];
}

typedef enum { REGION_HOST, REGION_DEVICE, REGION_INVALID } RegionKind;

/*
 * Classifies [address, address + bytes): host memory (outside the arena),
 * device memory (inside one live allocation), or invalid, with the reason
 * written to `reason`.
 */
static RegionKind classify_region(uintptr_t address, size_t bytes,
                                  char *reason, size_t reason_length) {
  if (!in_arena(address)) {
    if (address == 0) {
      snprintf(reason, reason_length, "is a null pointer");
      return REGION_INVALID;
    }
    return REGION_HOST;
  }
  const Allocation *allocation = allocation_at_or_below(address);
  if (!allocation || address >= allocation->address + allocation->mapped_bytes) {
    snprintf(reason, reason_length, "is device memory that was never allocated");
    return REGION_INVALID;
  }
  if (!allocation->live) {
    snprintf(reason, reason_length,
             "is in freed device memory (allocation 0x%llx of %zu bytes, "
             "freed by call #%d)",
             (unsigned long long)allocation->address, allocation->bytes,
             allocation->freed_by);
    return REGION_INVALID;
  }
  if (bytes > allocation->bytes ||
      address - allocation->address > allocation->bytes - bytes) {
    snprintf(reason, reason_length,
             "runs past the end of allocation 0x%llx of %zu bytes",
             (unsigned long long)allocation->address, allocation->bytes);
    return REGION_INVALID;
  }
  return REGION_DEVICE;
}

static bool stream_is_usable(CUstream stream) {
  if (!stream) /* the legacy default stream */
    return true;
  for (struct CUstream_st *s = streams; s; s = s->next)
    if (s == stream)
      return s->live;
  return false;
}

static struct CUevent_st *find_live_event(CUevent event) {
  for (struct CUevent_st *e = events; e; e = e->next)
    if (e == event)
      return e->live ? e : NULL;
  return NULL;
}

static struct CUmod_st *find_loaded_module(CUmodule module) {
  for (struct CUmod_st *m = modules; m; m = m->next)
    if (m == module)
      return m->loaded ? m : NULL;
  return NULL;
}

static struct CUfunc_st *find_function(CUfunction function) {
  for (struct CUmod_st *m = modules; m; m = m->next)
    for (struct CUfunc_st *f = m->functions; f; f = f->next)
      if (f == function)
        return f;
  return NULL;
}

/*===----------------------------------------------------------------------===
  Entry-point protocol

  Each entry point locks the state, calls begin_call (which applies a queued
  failure and checks initialization and the current context), does its work,
  logs one line, unlocks.
  ===----------------------------------------------------------------------===*/

typedef enum { CONTEXT_NOT_NEEDED, CONTEXT_NEEDED } ContextRequirement;

static CUresult begin_call(const char *call, ContextRequirement requirement) {
  pthread_mutex_lock(&fake_mutex);
  CUresult injected = take_pending_failure(call);
  if (injected != CUDA_SUCCESS) {
    record_call("fail call=%s error=%s", call, error_name(injected));
    return injected;
  }
  if (!driver_initialized && strcmp(call, "cuInit") != 0) {
    record_misuse("%s called before cuInit", call);
    return CUDA_ERROR_NOT_INITIALIZED;
  }
  if (requirement == CONTEXT_NEEDED && !current_context) {
    record_misuse("%s called with no current context on this thread", call);
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  return CUDA_SUCCESS;
}

static CUresult end_call(CUresult result) {
  pthread_mutex_unlock(&fake_mutex);
  return result;
}

/*===----------------------------------------------------------------------===
  Initialization, devices, contexts
  ===----------------------------------------------------------------------===*/

CUresult cuInit(unsigned int flags) {
  CUresult result = begin_call("cuInit", CONTEXT_NOT_NEEDED);
  if (result != CUDA_SUCCESS)
    return end_call(result);
  if (flags != 0)
    return end_call(CUDA_ERROR_INVALID_VALUE);
  if (!reserve_arena()) {
    record_misuse("cuInit: cannot reserve address space for device memory");
    return end_call(CUDA_ERROR_OUT_OF_MEMORY);
  }
  driver_initialized = true;
  record_call("init");
  return end_call(CUDA_SUCCESS);
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  CUresult result = begin_call("cuDeviceGet", CONTEXT_NOT_NEEDED);
  if (result != CUDA_SUCCESS)
    return end_call(result);
  if (!device)
    return end_call(CUDA_ERROR_INVALID_VALUE);
  if (ordinal != 0)
    return end_call(CUDA_ERROR_INVALID_DEVICE);
  *device = 0;
  record_call("device_get ordinal=%d", ordinal);
  return end_call(CUDA_SUCCESS);
}

CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attribute,
                              CUdevice device) {
  CUresult result = begin_call("cuDeviceGetAttribute", CONTEXT_NOT_NEEDED);
  if (result != CUDA_SUCCESS)
    return end_call(result);
  if (!value)
    return end_call(CUDA_ERROR_INVALID_VALUE);
  if (device != 0)
    return end_call(CUDA_ERROR_INVALID_DEVICE);
  switch (attribute) {
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    *value = DEVICE_MAX_THREADS_PER_BLOCK;
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
    *value = DEVICE_DEFAULT_DYNAMIC_SHARED_BYTES;
    break;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
    *value = 32;
    break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
    *value = DEVICE_MULTIPROCESSORS;
    break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    *value = 9;
    break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
    *value = 0;
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
    *value = DEVICE_OPTIN_SHARED_BYTES;
    break;
  default:
    record_call("device_attribute attribute=%d error=unmodelled", attribute);
    return end_call(CUDA_ERROR_INVALID_VALUE);
  }
  record_call("device_attribute attribute=%d value=%d", attribute, *value);
  return end_call(CUDA_SUCCESS);
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice device) {
  CUresult result = begin_call("cuDevicePrimaryCtxRetain", CONTEXT_NOT_NEEDED);
  if (result != CUDA_SUCCESS)
    return end_call(result);
  if (!context)
    return end_call(CUDA_ERROR_INVALID_VALUE);
  if (device != 0)
    return end_call(CUDA_ERROR_INVALID_DEVICE);
  ++primary_context_retains;
  *context = &primary_context;
  record_call("primary_context_retain device=%d", device);
  return end_call(CUDA_SUCCESS);
}

/* Not logged: the runtime asks on every entry. */
CUresult cuCtxGetCurrent(CUcontext *context) {
  CUresult result = begin_call("cuCtxGetCurrent", CONTEXT_NOT_NEEDED);
  if (result != CUDA_SUCCESS)
    return end_call(result);
  if (!context)
    return end_call(CUDA_ERROR_INVALID_VALUE);
  *context = current_context;
  return end_call(CUDA_SUCCESS);
}

CUresult cuCtxSetCurrent(CUcontext context) {
  CUresult result = begin_call("cuCtxSetCurrent", CONTEXT_NOT_NEEDED);
  if (result != CUDA_SUCCESS)
    return end_call(result);
  if (context && (context != &primary_context || !primary_context_retains)) {
    record_misuse("cuCtxSetCurrent: %p is not a retained context",
                  (void *)context);
    return end_call(CUDA_ERROR_INVALID_CONTEXT);
  }
  current_context = context;
  record_call("context_set_current context=%p", (void *)context);
  return end_call(CUDA_SUCCESS);
}

/*===----------------------------------------------------------------------===
  Modules and kernels
  ===----------------------------------------------------------------------===*/

static uint64_t read_le(const unsigned char *bytes, int width) {
  uint64_t value = 0;
  for (int i = width - 1; i >= 0; --i)
    value = value << 8 | bytes[i];
  return value;
}

/* Recognizes the image and its size the way the driver does: a 64-bit ELF
   (cubin) ends after its section or program header table, a fatbin header
   gives its size, anything else must be NUL-terminated PTX. */
static bool identify_image(const unsigned char *image, ImageFormat *format,
                           size_t *bytes) {
  if (memcmp(image, "\x7f" "ELF", 4) == 0) {
    if (image[4] != 2) /* ELFCLASS64 */
      return false;
    uint64_t section_end =
        read_le(image + 0x28, 8) + read_le(image + 0x3A, 2) * read_le(image + 0x3C, 2);
    uint64_t program_end =
        read_le(image + 0x20, 8) + read_le(image + 0x36, 2) * read_le(image + 0x38, 2);
    *format = IMAGE_CUBIN;
    *bytes = (size_t)(section_end > program_end ? section_end : program_end);
    return true;
  }
  if (read_le(image, 4) == 0xBA55ED50u) {
    *format = IMAGE_FATBIN;
    *bytes = (size_t)(read_le(image + 6, 2) + read_le(image + 8, 8));
    return true;
  }
  const char *text = (const char *)image;
  if (!strstr(text, ".version") || !strstr(text, ".target"))
    return false;
  *format = IMAGE_PTX;
  *bytes = strlen(text) + 1;
  return true;
}

/* The size of a PTX parameter declaration such as `.param .u64 p`,
   `.param .align 8 .b8 p[16]`, or 0 when it has no recognized type. */
static size_t ptx_parameter_size(const char *declaration, size_t length) {
  static const struct {
    const char *type;
    size_t bytes;
  } TYPES[] = {{".b8", 1},  {".u8", 1},  {".s8", 1},   {".b16", 2},
               {".u16", 2}, {".s16", 2}, {".f16", 2},  {".bf16", 2},
               {".b32", 4}, {".u32", 4}, {".s32", 4},  {".f32", 4},
               {".b64", 8}, {".u64", 8}, {".s64", 8},  {".f64", 8}};
  size_t element = 0;
  for (size_t i = 0; i < length && !element; ++i) {
    if (declaration[i] != '.')
      continue;
    for (size_t t = 0; t < sizeof TYPES / sizeof TYPES[0]; ++t) {
      size_t type_length = strlen(TYPES[t].type);
      if (i + type_length <= length &&
          strncmp(declaration + i, TYPES[t].type, type_length) == 0 &&
          (i + type_length == length ||
           !isalnum((unsigned char)declaration[i + type_length]))) {
        element = TYPES[t].bytes;
        break;
      }
    }
  }
  const char *bracket = memchr(declaration, '[', length);
  if (element && bracket)
    return element * strtoull(bracket + 1, NULL, 10);
  return element;
}

static bool is_ptx_identifier_char(char c) {
  return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '.';
}

/* Collects `.entry NAME ( .param ..., .param ... )` declarations. */
static void parse_ptx_kernels(struct CUmod_st *module) {
  const char *text = (const char *)module->image;
  for (const char *cursor = strstr(text, ".entry"); cursor;
       cursor = strstr(cursor, ".entry")) {
    cursor += strlen(".entry");
    if (!isspace((unsigned char)*cursor))
      continue;
    while (isspace((unsigned char)*cursor))
      ++cursor;
    const char *name = cursor;
    while (is_ptx_identifier_char(*cursor))
      ++cursor;
    size_t name_length = (size_t)(cursor - name);
    if (!name_length)
      continue;
    KernelDeclaration kernel = {strndup(name, name_length), 0, NULL};
    while (isspace((unsigned char)*cursor))
      ++cursor;
    if (*cursor == '(') {
      const char *close = strchr(cursor, ')');
      const char *end = close ? close : cursor + strlen(cursor);
      for (const char *parameter = cursor + 1; parameter < end;) {
        const char *comma = memchr(parameter, ',', (size_t)(end - parameter));
        const char *parameter_end = comma ? comma : end;
        size_t length = (size_t)(parameter_end - parameter);
        const char *param_keyword = strstr(parameter, ".param");
        if (param_keyword && param_keyword < parameter_end) {
          size_t *sizes = realloc(kernel.parameter_sizes,
                                  (size_t)(kernel.parameter_count + 1) *
                                      sizeof *sizes);
          if (sizes) {
            kernel.parameter_sizes = sizes;
            sizes[kernel.parameter_count++] =
                ptx_parameter_size(parameter, length);
          }
        }
        parameter = parameter_end + 1;
      }
      cursor = end;
    }
    KernelDeclaration *kernels =
        realloc(module->kernels,
                (size_t)(module->kernel_count + 1) * sizeof *kernels);
    if (!kernels) {
      free(kernel.name);
      free(kernel.parameter_sizes);
      return;
    }
    module->kernels = kernels;
    module->kernels[module->kernel_count++] = kernel;
  }
}

static CUresult load_module(CUmodule *module_out, const void *image,
                            const char *event, int optimization_level,
                            char *jit_log, size_t jit_log_bytes) {
  ImageFormat format;
  size_t bytes;
  if (!module_out || !image)
    return CUDA_ERROR_INVALID_VALUE;
  /* Like the real driver, both load paths accept any image format and reject
     an unrecognized one with CUDA_ERROR_INVALID_IMAGE (and a JIT log line). */
  if (!identify_image(image, &format, &bytes)) {
    if (jit_log && jit_log_bytes)
      snprintf(jit_log, jit_log_bytes,
               "fake CUDA driver: the image is neither a cubin, a fatbin nor "
               "PTX text (with .version and .target directives)");
    record_call("%s error=CUDA_ERROR_INVALID_IMAGE", event);
    return CUDA_ERROR_INVALID_IMAGE;
  }
  struct CUmod_st *module = calloc(1, sizeof *module);
  unsigned char *copy = malloc(bytes);
  if (!module || !copy) {
    free(module);
    free(copy);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  memcpy(copy, image, bytes);
  module->loaded = true;
  module->format = format;
  module->image = copy;
  module->image_bytes = bytes;
  if (format == IMAGE_PTX)
    parse_ptx_kernels(module);
  module->next = modules;
  modules = module;
  *module_out = module;
  if (optimization_level >= 0)
    record_call("%s module=%p format=%s bytes=%zu kernels=%d opt=%d", event,
                (void *)module, IMAGE_FORMAT_NAMES[format], bytes,
                module->kernel_count, optimization_level);
  else
    record_call("%s module=%p format=%s bytes=%zu kernels=%d", event,
                (void *)module, IMAGE_FORMAT_NAMES[format], bytes,
                module->kernel_count);
  return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  CUresult result = begin_call("cuModuleLoadData", CONTEXT_NEEDED);
  if (result == CUDA_SUCCESS)
    result = load_module(module, image, "module_load", -1, NULL, 0);
  return end_call(result);
}

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image,
                            unsigned int option_count, CUjit_option *options,
                            void **option_values) {
  CUresult result = begin_call("cuModuleLoadDataEx", CONTEXT_NEEDED);
  if (result != CUDA_SUCCESS)
    return end_call(result);
  if (option_count && (!options || !option_values))
    return end_call(CUDA_ERROR_INVALID_VALUE);
  int optimization_level = 4; /* the driver's default */
  char *jit_log = NULL;
  size_t jit_log_bytes = 0;
  for (unsigned int i = 0; i < option_count; ++i) {
    uintptr_t value = (uintptr_t)option_values[i];
    switch (options[i]) {
    case CU_JIT_OPTIMIZATION_LEVEL:
      optimization_level = (int)value;
      break;
    case CU_JIT_ERROR_LOG_BUFFER:
      jit_log = option_values[i];
      break;
    case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
      jit_log_bytes = value;
      break;
    default:
      break;
    }
  }
  if (optimization_level < 0 || optimization_level > 4) {
    record_misuse("cuModuleLoadDataEx: optimization level %d is not in 0..4",
                  optimization_level);
    return end_call(CUDA_ERROR_INVALID_VALUE);
  }
  /* A module is loaded through the JIT path even without a log buffer. */
  static char no_log[1];
  result = load_module(module, image, "module_load_jit", optimization_level,
                       jit_log ? jit_log : no_log,
                       jit_log ? jit_log_bytes : sizeof no_log);
  return end_call(result);
}

CUresult cuModuleUnload(CUmodule module) {
  CUresult result = begin_call("cuModuleUnload", CONTEXT_NEEDED);
  if (result != CUDA_SUCCESS)
    return end_call(result);
  struct CUmod_st *loaded = find_loaded_module(module);
  if (!loaded) {
    record_misuse("cuModuleUnload: %p is not a loaded module", (void *)module);
    return end_call(CUDA_ERROR_INVALID_HANDLE);
  }
  loaded->loaded = false; /* kept until reset, so stale handles are caught */
  record_call("module_unload module=%p", (void *)module);
  return end_call(CUDA_SUCCESS);
}

CUresult cuModuleGetFunction(CUfunction *function, CUmodule module,
                             const char *name) {
  CUresult result = begin_call("cuModuleGetFunction", CONTEXT_NEEDED);
  if (result != CUDA_SUCCESS)
    return end_call(result);
  if (!function || !name)
    return end_call(CUDA_ERROR_INVALID_VALUE);
  struct CUmod_st *loaded = find_loaded_module(module);
  if (!loaded) {
    record_misuse("cuModuleGetFunction(\"%s\"): %p is not a loaded module",
                  name, (void *)module);
    return end_call(CUDA_ERROR_INVALID_HANDLE);
  }
  for (struct CUfunc_st *f = loaded->functions; f; f = f->next) {
    if (strcmp(f->name, name) == 0) {
      *function = f;
      record_call("get_function module=%p name=%s", (void *)module, name);
      return end_call(CUDA_SUCCESS);
    }
  }
  const KernelDeclaration *declaration = NULL;
  for (int i = 0; i < loaded->kernel_count; ++i)
    if (strcmp(loaded->kernels[i].name, name) == 0)
      declaration = &loaded->kernels[i];
  if (loaded->format == IMAGE_PTX && !declaration) {
    record_call("get_function module=%p name=%s error=CUDA_ERROR_NOT_FOUND",
                (void *)module, name);
    return end_call(CUDA_ERROR_NOT_FOUND);
  }
  struct CUfunc_st *created = calloc(1, sizeof *created);
  char *created_name = strdup(name);
  if (!created || !created_name) {
    free(created);
    free(created_name);
    return end_call(CUDA_ERROR_OUT_OF_MEMORY);
  }
  created->module = loaded;
  created->name = created_name;
  created->parameter_count = declaration ? declaration->parameter_count : -1;
  created->parameter_sizes = declaration ? declaration->parameter_sizes : NULL;
  created->max_dynamic_shared_bytes = DEVICE_DEFAULT_DYNAMIC_SHARED_BYTES;
  created->next = loaded->functions;
  loaded->functions = created;
  *function = created;
  record_call("get_function module=%p name=%s", (void *)module, name);
  return end_call(CUDA_SUCCESS);
}

CUresult cuFuncSetAttribute(CUfunction function,
                            CUfunction_attribute attribute, int value) {
  CUresult result = begin_call("cuFuncSetAttribute", CONTEXT_NEEDED);
  if (result != CUDA_SUCCESS)
    return end_call(result);
  struct CUfunc_st *f = find_function(function);
  if (!f || !f->module->loaded) {
    record_misuse("cuFuncSetAttribute: %p is not a function of a loaded module",
                  (void *)function);
    return end_call(CUDA_ERROR_INVALID_HANDLE);
  }
  if (attribute != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
    record_call("function_set_attribute name=%s attribute=%d error=unmodelled",
                f->name, attribute);
    return end_call(CUDA_ERROR_INVALID_VALUE);
  }
  if (value < 0 || value > DEVICE_OPTIN_SHARED_BYTES) {
    record_call("function_set_attribute name=%s attribute=%d value=%d "
                "error=CUDA_ERROR_INVALID_VALUE",
                f->name, attribute, value);
    return end_call(CUDA_ERROR_INVALID_VALUE);
  }
  f->max_dynamic_shared_bytes = value;
  record_call("function_set_attribute name=%s attribute=%d value=%d", f->name,
              attribute, value);
  return end_call(CUDA_SUCCESS);
}

/* Appends the kernel's arguments to `line` (` args=0x..,0x..`; an aggregate
   as `<N bytes>`) and checks pointer-sized arguments that point into the
   device arena. */
static CUresult check_and_format_arguments(const struct CUfunc_st *f,
                                           void **params, char *line,
                                           size_t line_bytes) {
  CUresult result = CUDA_SUCCESS;
  size_t used = strlen(line);
  for (int i = 0; i < f->parameter_count; ++i) {
    size_t size = f->parameter_sizes[i];
    bool scalar = size == 8 || size == 4 || size == 2 || size == 1;
    unsigned long long value = 0;
    if (scalar)
      memcpy(&value, params[i], size); /* little-endian host */
    if (used < line_bytes) {
      const char *separator = i ? "," : " args=";
      int written =
          scalar ? snprintf(line + used, line_bytes - used, "%s0x%llx",
                            separator, value)
                 : snprintf(line + used, line_bytes - used, "%s<%zu bytes>",
                            separator, size);
      used += written > 0 ? (size_t)written : 0;
    }
    if (size != 8 || !in_arena((uintptr_t)value))
      continue;
    char reason[256];
    if (classify_region((uintptr_t)value, 1, reason, sizeof reason) ==
        REGION_INVALID) {
      record_misuse("launch %s: argument #%d (0x%llx) %s", f->name, i, value,
                    reason);
      result = CUDA_ERROR_ILLEGAL_ADDRESS;
    }
  }
  return result;
}

/*
 * Validates and records a launch; runs nothing. An argument pointing into
 * freed or never-allocated device memory is reported here (a real GPU would
 * fault asynchronously and report CUDA_ERROR_ILLEGAL_ADDRESS at a later
 * synchronization).
 */
CUresult cuLaunchKernel(CUfunction function, unsigned int grid_x,
                        unsigned int grid_y, unsigned int grid_z,
                        unsigned int block_x, unsigned int block_y,
                        unsigned int block_z, unsigned int shared_memory_bytes,
                        CUstream stream, void **kernel_params, void **extra) {
  CUresult result = begin_call("cuLaunchKernel", CONTEXT_NEEDED);
  if (result != CUDA_SUCCESS)
    return end_call(result);
  struct CUfunc_st *f = find_function(function);
  if (!f || !f->module->loaded) {
    record_misuse("cuLaunchKernel: %p is not a function of a loaded module",
                  (void *)function);
    return end_call(CUDA_ERROR_INVALID_HANDLE);
  }
  char line[2048];
  snprintf(line, sizeof line,
           "launch name=%s grid=%u,%u,%u block=%u,%u,%u smem=%u stream=%p",
           f->name, grid_x, grid_y, grid_z, block_x, block_y, block_z,
           shared_memory_bytes, (void *)stream);
  unsigned long long threads =
      (unsigned long long)block_x * block_y * block_z;
  if (!grid_x || !grid_y || !grid_z || !block_x || !block_y || !block_z ||
      grid_y > 65535 || grid_z > 65535 || block_z > 64 ||
      threads > DEVICE_MAX_THREADS_PER_BLOCK) {
    record_misuse("launch %s: invalid configuration grid=%u,%u,%u "
                  "block=%u,%u,%u",
                  f->name, grid_x, grid_y, grid_z, block_x, block_y, block_z);
    result = CUDA_ERROR_INVALID_VALUE;
  } else if (shared_memory_bytes > (unsigned)f->max_dynamic_shared_bytes) {
    record_misuse("launch %s: %u bytes of dynamic shared memory exceed the "
                  "function's limit of %d (cuFuncSetAttribute raises it)",
                  f->name, shared_memory_bytes, f->max_dynamic_shared_bytes);
    result = CUDA_ERROR_INVALID_VALUE;
  } else if (!stream_is_usable(stream)) {
    record_misuse("launch %s: stream %p is not live", f->name, (void *)stream);
    result = CUDA_ERROR_INVALID_HANDLE;
  } else if (extra) {
    result = CUDA_ERROR_NOT_SUPPORTED; /* the runtime passes kernel_params */
  } else if (f->parameter_count > 0 && !kernel_params) {
    record_misuse("launch %s: %d parameters declared, no kernel_params",
                  f->name, f->parameter_count);
    result = CUDA_ERROR_INVALID_VALUE;
  }
  size_t used = strlen(line);
  if (f->parameter_count >= 0)
    snprintf(line + used, sizeof line - used, " params=%d", f->parameter_count);
  else
    snprintf(line + used, sizeof line - used, " params=?");
  if (result == CUDA_SUCCESS && f->parameter_count > 0)
    result = check_and_format_arguments(f, kernel_params, line, sizeof line);
  if (result != CUDA_SUCCESS)
    record_call("%s error=%s", line, error_name(result));
  else
    record_call("%s", line);
  return end_call(result);
}

/*===----------------------------------------------------------------------===
  Streams and events
  ===----------------------------------------------------------------------===*/

CUresult cuStreamCreate(CUstream *stream, unsigned int flags) {
  CUresult result = begin_call("cuStreamCreate", CONTEXT_NEEDED);
  if (result != CUDA_SUCCESS)
    return end_call(result);
  struct CUstream_st *created = stream ? calloc(1, sizeof *created) : NULL;
  if (!created)
    return end_call(stream ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_VALUE);
  created->live = true;
  created->next = streams;
  streams = created;
  *stream = created;
  record_call("stream_create stream=%p flags=%u", (void *)created, flags);
  return end_call(CUDA_SUCCESS);
}

CUresult cuStreamDestroy_v2(CUstream stream) {
  CUresult result = begin_call("cuStreamDestroy_v2", CONTEXT_NEEDED);
  if (result != CUDA_SUCCESS)
    return end_call(result);
  if (!stream || !stream_is_usable(stream)) {
    record_misuse("cuStreamDestroy_v2: %p is not a live stream", (void *)stream);
    return end_call(CUDA_ERROR_INVALID_HANDLE);
  }
  stream->live = false;
  record_call("stream_destroy stream=%p", (void *)stream);
  return end_call(CUDA_SUCCESS);
}

CUresult cuStreamSynchronize(CUstream stream) {
  CUresult result = begin_call("cuStreamSynchronize", CONTEXT_NEEDED);
  if (result != CUDA_SUCCESS)
    return end_call(result);
  if (!stream_is_usable(stream)) {
    record_misuse("cuStreamSynchronize: %p is not a live stream",
                  (void *)stream);
    return end_call(CUDA_ERROR_INVALID_HANDLE);
  }
  record_call("stream_synchronize stream=%p", (void *)stream);
  return end_call(CUDA_SUCCESS);
}

CUresult cuStreamWaitEvent(CUstream stream, CUevent event,
                           unsigned int flags) {
  CUresult result = begin_call("cuStreamWaitEvent", CONTEXT_NEEDED);
  if (result != CUDA_SUCCESS)
    return end_call(result);
  if (!stream_is_usable(stream) || !find_live_event(event)) {
    record_misuse("cuStreamWaitEvent: stream %p or event %p is not live",
                  (void *)stream, (void *)event);
    return end_call(CUDA_ERROR_INVALID_HANDLE);
  }
  record_call("stream_wait_event stream=%p event=%p flags=%u", (void *)stream,
              (void *)event, flags);
  return end_call(CUDA_SUCCESS);
}

CUresult cuEventCreate(CUevent *event, unsigned int flags) {
  CUresult result = begin_call("cuEventCreate", CONTEXT_NEEDED);
  if (result != CUDA_SUCCESS)
    return end_call(result);
  struct CUevent_st *created = event ? calloc(1, sizeof *created) : NULL;
  if (!created)
    return end_call(event ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_VALUE);
  created->live = true;
  created->next = events;
  events = created;
  *event = created;
  record_call("event_create event=%p flags=%u", (void *)created, flags);
  return end_call(CUDA_SUCCESS);
}

CUresult cuEventDestroy_v2(CUevent event) {
  CUresult result = begin_call("cuEventDestroy_v2", CONTEXT_NEEDED);
  if (result != CUDA_SUCCESS)
    return end_call(result);
  struct CUevent_st *live = find_live_event(event);
  if (!live) {
    record_misuse("cuEventDestroy_v2: %p is not a live event", (void *)event);
    return end_call(CUDA_ERROR_INVALID_HANDLE);
  }
  live->live = false;
  record_call("event_destroy event=%p", (void *)event);
  return end_call(CUDA_SUCCESS);
}

CUresult cuEventSynchronize(CUevent event) {
  CUresult result = begin_call("cuEventSynchronize", CONTEXT_NEEDED);
  if (result != CUDA_SUCCESS)
    return end_call(result);
  if (!find_live_event(event)) {
    record_misuse("cuEventSynchronize: %p is not a live event", (void *)event);
    return end_call(CUDA_ERROR_INVALID_HANDLE);
  }
  record_call("event_synchronize event=%p", (void *)event);
  return end_call(CUDA_SUCCESS);
}

CUresult cuEventRecord(CUevent event, CUstream stream) {
  CUresult result = begin_call("cuEventRecord", CONTEXT_NEEDED);
  if (result != CUDA_SUCCESS)
    return end_call(result);
  struct CUevent_st *live = find_live_event(event);
  if (!live || !stream_is_usable(stream)) {
    record_misuse("cuEventRecord: event %p or stream %p is not live",
                  (void *)event, (void *)stream);
    return end_call(CUDA_ERROR_INVALID_HANDLE);
  }
  live->recorded = true;
  record_call("event_record event=%p stream=%p", (void *)event, (void *)stream);
  return end_call(CUDA_SUCCESS);
}

/*===----------------------------------------------------------------------===
  Memory
  ===----------------------------------------------------------------------===*/

static CUresult allocate(CUdeviceptr *pointer, size_t bytes, bool managed) {
  const char *event = managed ? "alloc_managed" : "alloc";
  if (!pointer || bytes == 0) {
    record_call("%s bytes=%zu error=CUDA_ERROR_INVALID_VALUE", event, bytes);
    return CUDA_ERROR_INVALID_VALUE;
  }
  size_t mapped = (bytes + page_bytes - 1) / page_bytes * page_bytes;
  bool fits_limit = bytes <= device_memory_limit - live_device_bytes;
  bool fits_arena = mapped >= bytes &&
                    mapped + page_bytes <= arena_base + arena_bytes - arena_next;
  if (!fits_limit || !fits_arena ||
      mprotect((void *)arena_next, mapped, PROT_READ | PROT_WRITE) != 0) {
    record_call("%s bytes=%zu error=CUDA_ERROR_OUT_OF_MEMORY", event, bytes);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (allocation_count == allocation_capacity) {
    int capacity = allocation_capacity ? 2 * allocation_capacity : 64;
    Allocation *grown =
        realloc(allocations, (size_t)capacity * sizeof *allocations);
    if (!grown) {
      make_inaccessible(arena_next, mapped);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    allocations = grown;
    allocation_capacity = capacity;
  }
  allocations[allocation_count++] = (Allocation){
      .address = arena_next,
      .bytes = bytes,
      .mapped_bytes = mapped,
      .live = true,
      .managed = managed,
      .allocated_by = call_log.count,
      .freed_by = -1,
  };
  *pointer = arena_next;
  arena_next += mapped + page_bytes; /* leave a guard page */
  live_device_bytes += bytes;
  record_call("%s ptr=0x%llx bytes=%zu", event, *pointer, bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *pointer, size_t bytes) {
  CUresult result = begin_call("cuMemAlloc_v2", CONTEXT_NEEDED);
  if (result == CUDA_SUCCESS)
    result = allocate(pointer, bytes, false);
  return end_call(result);
}

CUresult cuMemAllocManaged(CUdeviceptr *pointer, size_t bytes,
                           unsigned int flags) {
  CUresult result = begin_call("cuMemAllocManaged", CONTEXT_NEEDED);
  if (result == CUDA_SUCCESS && flags != CU_MEM_ATTACH_GLOBAL && flags != 2)
    result = CUDA_ERROR_INVALID_VALUE; /* 2 is CU_MEM_ATTACH_HOST */
  if (result == CUDA_SUCCESS)
    result = allocate(pointer, bytes, true);
  return end_call(result);
}

CUresult cuMemFree_v2(CUdeviceptr pointer) {
  CUresult result = begin_call("cuMemFree_v2", CONTEXT_NEEDED);
  if (result != CUDA_SUCCESS)
    return end_call(result);
  if (pointer == 0) {
    record_call("free ptr=0x0");
    return end_call(CUDA_SUCCESS);
  }
  Allocation *allocation =
      in_arena(pointer) ? allocation_at_or_below(pointer) : NULL;
  if (!allocation || pointer >= allocation->address + allocation->mapped_bytes) {
    record_misuse("free of 0x%llx, which is not device memory this driver "
                  "allocated",
                  pointer);
    result = CUDA_ERROR_INVALID_VALUE;
  } else if (!allocation->live) {
    record_misuse("double free of device memory 0x%llx (%zu bytes, allocated "
                  "by call #%d, freed by call #%d)",
                  pointer, allocation->bytes, allocation->allocated_by,
                  allocation->freed_by);
    result = CUDA_ERROR_INVALID_VALUE;
  } else if (pointer != allocation->address) {
    record_misuse("free of 0x%llx, inside allocation 0x%llx but not its start",
                  pointer, (unsigned long long)allocation->address);
    result = CUDA_ERROR_INVALID_VALUE;
  }
  if (result != CUDA_SUCCESS) {
    record_call("free ptr=0x%llx error=%s", pointer, error_name(result));
    return end_call(result);
  }
  allocation->live = false;
  allocation->freed_by = call_log.count;
  live_device_bytes -= allocation->bytes;
  make_inaccessible(allocation->address, allocation->mapped_bytes);
  record_call("free ptr=0x%llx", pointer);
  return end_call(CUDA_SUCCESS);
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                       CUstream stream) {
  CUresult result = begin_call("cuMemcpyAsync", CONTEXT_NEEDED);
  if (result != CUDA_SUCCESS)
    return end_call(result);
  char dst_reason[256], src_reason[256];
  RegionKind dst_kind =
      classify_region(dst, bytes, dst_reason, sizeof dst_reason);
  RegionKind src_kind =
      classify_region(src, bytes, src_reason, sizeof src_reason);
  if (dst_kind == REGION_INVALID)
    record_misuse("memcpy of %zu bytes: destination 0x%llx %s", bytes, dst,
                  dst_reason);
  if (src_kind == REGION_INVALID)
    record_misuse("memcpy of %zu bytes: source 0x%llx %s", bytes, src,
                  src_reason);
  if (dst_kind == REGION_INVALID || src_kind == REGION_INVALID) {
    record_call("memcpy dst=0x%llx src=0x%llx bytes=%zu "
                "error=CUDA_ERROR_INVALID_VALUE",
                dst, src, bytes);
    return end_call(CUDA_ERROR_INVALID_VALUE);
  }
  if (!stream_is_usable(stream)) {
    record_misuse("memcpy: stream %p is not live", (void *)stream);
    return end_call(CUDA_ERROR_INVALID_HANDLE);
  }
  if (zero_readback && src_kind == REGION_DEVICE && dst_kind != REGION_DEVICE)
    memset((void *)(uintptr_t)dst, 0, bytes);
  else
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes);
  record_call("memcpy_%cto%c dst=0x%llx src=0x%llx bytes=%zu",
              src_kind == REGION_DEVICE ? 'd' : 'h',
              dst_kind == REGION_DEVICE ? 'd' : 'h', dst, src, bytes);
  return end_call(CUDA_SUCCESS);
}

static CUresult fill_device_words(const char *event, CUdeviceptr dst,
                                  unsigned int value, size_t word_bytes,
                                  size_t count, CUstream stream) {
  char reason[256];
  if (count > SIZE_MAX / word_bytes || dst % word_bytes != 0 ||
      classify_region(dst, count * word_bytes, reason, sizeof reason) !=
          REGION_DEVICE) {
    if (dst % word_bytes != 0)
      snprintf(reason, sizeof reason, "is not %zu-byte aligned", word_bytes);
    record_misuse("%s of %zu words: destination 0x%llx %s", event, count, dst,
                  reason);
    record_call("%s ptr=0x%llx count=%zu error=CUDA_ERROR_INVALID_VALUE", event,
                dst, count);
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (!stream_is_usable(stream)) {
    record_misuse("%s: stream %p is not live", event, (void *)stream);
    return CUDA_ERROR_INVALID_HANDLE;
  }
  unsigned char *bytes = (unsigned char *)(uintptr_t)dst;
  for (size_t i = 0; i < count; ++i)
    memcpy(bytes + i * word_bytes, &value, word_bytes); /* little-endian */
  record_call("%s ptr=0x%llx count=%zu value=0x%x", event, dst, count, value);
  return CUDA_SUCCESS;
}

CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t count,
                          CUstream stream) {
  CUresult result = begin_call("cuMemsetD32Async", CONTEXT_NEEDED);
  if (result == CUDA_SUCCESS)
    result = fill_device_words("memset32", dst, value, 4, count, stream);
  return end_call(result);
}

CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short value, size_t count,
                          CUstream stream) {
  CUresult result = begin_call("cuMemsetD16Async", CONTEXT_NEEDED);
  if (result == CUDA_SUCCESS)
    result = fill_device_words("memset16", dst, value, 2, count, stream);
  return end_call(result);
}

CUresult cuMemHostRegister_v2(void *pointer, size_t bytes,
                              unsigned int flags) {
  CUresult result = begin_call("cuMemHostRegister_v2", CONTEXT_NEEDED);
  if (result != CUDA_SUCCESS)
    return end_call(result);
  if (!pointer || !bytes || in_arena((uintptr_t)pointer)) {
    record_misuse("cuMemHostRegister_v2: %p (%zu bytes) is not host memory",
                  pointer, bytes);
    return end_call(CUDA_ERROR_INVALID_VALUE);
  }
  for (HostRegistration *r = host_registrations; r; r = r->next) {
    uintptr_t start = (uintptr_t)pointer, other = (uintptr_t)r->pointer;
    if (start < other + r->bytes && other < start + bytes) {
      record_call("host_register ptr=%p bytes=%zu "
                  "error=CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
                  pointer, bytes);
      return end_call(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    }
  }
  HostRegistration *registration = malloc(sizeof *registration);
  if (!registration)
    return end_call(CUDA_ERROR_OUT_OF_MEMORY);
  *registration = (HostRegistration){pointer, bytes, host_registrations};
  host_registrations = registration;
  record_call("host_register ptr=%p bytes=%zu flags=%u", pointer, bytes, flags);
  return end_call(CUDA_SUCCESS);
}

CUresult cuMemHostUnregister(void *pointer) {
  CUresult result = begin_call("cuMemHostUnregister", CONTEXT_NEEDED);
  if (result != CUDA_SUCCESS)
    return end_call(result);
  for (HostRegistration **link = &host_registrations; *link;
       link = &(*link)->next) {
    if ((*link)->pointer == pointer) {
      HostRegistration *registration = *link;
      *link = registration->next;
      free(registration);
      record_call("host_unregister ptr=%p", pointer);
      return end_call(CUDA_SUCCESS);
    }
  }
  record_call("host_unregister ptr=%p error=CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
              pointer);
  return end_call(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
}

/*===----------------------------------------------------------------------===
  Inspection and control, for tests
  ===----------------------------------------------------------------------===*/

FAKE_EXPORT int fake_cuda_event_count(void) {
  pthread_mutex_lock(&fake_mutex);
  int count = call_log.count;
  pthread_mutex_unlock(&fake_mutex);
  return count;
}

/* Copies call-log line `index` into `buffer`; returns the line's length, or
   -1 when there is no such line. */
FAKE_EXPORT int fake_cuda_event(int index, char *buffer, size_t length) {
  pthread_mutex_lock(&fake_mutex);
  int result = log_copy(&call_log, index, buffer, length);
  pthread_mutex_unlock(&fake_mutex);
  return result;
}

FAKE_EXPORT int fake_cuda_error_count(void) {
  pthread_mutex_lock(&fake_mutex);
  int count = error_log.count;
  pthread_mutex_unlock(&fake_mutex);
  return count;
}

/* Copies error-log line `index` into `buffer`; returns the line's length, or
   -1 when there is no such line. */
FAKE_EXPORT int fake_cuda_error(int index, char *buffer, size_t length) {
  pthread_mutex_lock(&fake_mutex);
  int result = log_copy(&error_log, index, buffer, length);
  pthread_mutex_unlock(&fake_mutex);
  return result;
}

/* Makes the next call of driver entry point `call` (its symbol name, e.g.
   "cuMemAlloc_v2") return `cuda_error_code` without doing anything. */
FAKE_EXPORT void fake_cuda_fail_next(const char *call, int cuda_error_code) {
  if (!call)
    return;
  pthread_mutex_lock(&fake_mutex);
  add_pending_failure(call, strlen(call), (CUresult)cuda_error_code);
  pthread_mutex_unlock(&fake_mutex);
}

/* Caps the bytes of live device memory; allocations beyond it fail with
   CUDA_ERROR_OUT_OF_MEMORY. ULLONG_MAX (the default) means no cap. */
FAKE_EXPORT void fake_cuda_set_device_memory_limit(unsigned long long bytes) {
  pthread_mutex_lock(&fake_mutex);
  device_memory_limit = bytes;
  pthread_mutex_unlock(&fake_mutex);
}

FAKE_EXPORT unsigned long long fake_cuda_live_device_bytes(void) {
  pthread_mutex_lock(&fake_mutex);
  unsigned long long bytes = live_device_bytes;
  pthread_mutex_unlock(&fake_mutex);
  return bytes;
}

/* Records an error for every device allocation, module, stream, event and
   host registration still alive; returns how many it found. */
FAKE_EXPORT int fake_cuda_check_leaks(void) {
  pthread_mutex_lock(&fake_mutex);
  int leaks = 0;
  for (int i = 0; i < allocation_count; ++i) {
    const Allocation *a = &allocations[i];
    if (!a->live)
      continue;
    record_misuse("leak: %s memory 0x%llx of %zu bytes (allocated by call "
                  "#%d) was never freed",
                  a->managed ? "managed" : "device",
                  (unsigned long long)a->address, a->bytes, a->allocated_by);
    ++leaks;
  }
  for (struct CUmod_st *m = modules; m; m = m->next) {
    if (!m->loaded)
      continue;
    record_misuse("leak: module %p was never unloaded", (void *)m);
    ++leaks;
  }
  for (struct CUstream_st *s = streams; s; s = s->next) {
    if (!s->live)
      continue;
    record_misuse("leak: stream %p was never destroyed", (void *)s);
    ++leaks;
  }
  for (struct CUevent_st *e = events; e; e = e->next) {
    if (!e->live)
      continue;
    record_misuse("leak: event %p was never destroyed", (void *)e);
    ++leaks;
  }
  for (HostRegistration *r = host_registrations; r; r = r->next) {
    record_misuse("leak: host memory %p (%zu bytes) was never unregistered",
                  r->pointer, r->bytes);
    ++leaks;
  }
  pthread_mutex_unlock(&fake_mutex);
  return leaks;
}

/*
 * Forgets all device state (memory, modules, streams, events, registrations),
 * both logs and queued failures, and re-reads the environment. The driver
 * stays initialized and the primary context stays retained and current, so a
 * runtime that already initialized keeps working.
 */
FAKE_EXPORT void fake_cuda_reset(void) {
  pthread_mutex_lock(&fake_mutex);
  log_clear(&call_log);
  log_clear(&error_log);
  while (modules) {
    struct CUmod_st *m = modules;
    modules = m->next;
    while (m->functions) {
      struct CUfunc_st *f = m->functions;
      m->functions = f->next;
      free(f->name);
      free(f);
    }
    for (int i = 0; i < m->kernel_count; ++i) {
      free(m->kernels[i].name);
      free(m->kernels[i].parameter_sizes);
    }
    free(m->kernels);
    free(m->image);
    free(m);
  }
  while (streams) {
    struct CUstream_st *s = streams;
    streams = s->next;
    free(s);
  }
  while (events) {
    struct CUevent_st *e = events;
    events = e->next;
    free(e);
  }
  while (host_registrations) {
    HostRegistration *r = host_registrations;
    host_registrations = r->next;
    free(r);
  }
  if (arena_base)
    make_inaccessible(arena_base, arena_next - arena_base);
  arena_next = arena_base;
  free(allocations);
  allocations = NULL;
  allocation_count = allocation_capacity = 0;
  live_device_bytes = 0;
  configure_from_environment();
  pthread_mutex_unlock(&fake_mutex);
}

__attribute__((constructor)) static void load_configuration(void) {
  pthread_mutex_lock(&fake_mutex);
  configure_from_environment();
  pthread_mutex_unlock(&fake_mutex);
}
