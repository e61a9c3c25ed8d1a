/*
 * mgpu_runtime.c: accy's implementation of the MLIR GPU runtime ABI.
 *
 * MLIR's `gpu-to-llvm` lowering turns gpu.alloc, gpu.memcpy, gpu.launch_func
 * and the embedded gpu.binary into calls to a fixed set of C functions named
 * `mgpu*`. Upstream implements them in
 * mlir/lib/ExecutionEngine/CudaRuntimeWrappers.cpp (libmlir_cuda_runtime.so);
 * this file implements the same functions with the same C signatures (LLVM
 * 20-23), so host code JIT-compiled by the ExecutionEngine, or compiled ahead
 * of time and linked against libaccy_runtime.so, calls into it unchanged.
 *
 * Differences from upstream, all deliberate:
 *  - The CUDA driver is not linked: it is loaded with dlopen on first use, so
 *    the library builds, links and loads on machines without CUDA. The driver
 *    library is `libcuda.so.1`, or the path in the environment variable
 *    ACCY_CUDA_DRIVER (tests point it at libaccy_fake_cuda.so).
 *  - Errors are reported and recorded rather than only printed; see
 *    "Error reporting" below.
 *  - The primary context of the default device is retained once per process
 *    and made current on each calling thread, and left current (the CUDA
 *    runtime API behaves the same way), instead of pushed and popped around
 *    every call.
 *
 * Thread safety: initialization is guarded by pthread_once; the error record
 * by a mutex. Every entry point may be called from any thread.
 */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_driver.h"

#define ACCY_EXPORT __attribute__((visibility("default")))

/* The driver's soname; ACCY_CUDA_DRIVER (a path) overrides it. */
static const char DEFAULT_DRIVER_LIBRARY[] = "libcuda.so.1";
static const char DRIVER_LIBRARY_VARIABLE[] = "ACCY_CUDA_DRIVER";

/*===----------------------------------------------------------------------===
  Error reporting

  The ABI's entry points return void or a handle, so a failure cannot travel
  back through the return value (a NULL handle is the only hint the generated
  host code gets, and it does not look). Every failure is therefore

   1. printed to stderr as one line, `accy runtime: <what> failed: <NAME>:
      <description>` for a failed driver call, and
   2. recorded: accy_runtime_last_error() returns the message of the FIRST
      failure since the last accy_runtime_clear_error(), and
      accy_runtime_error_count() how many failures happened since.

  The first failure is kept because later ones are usually its consequences (a
  failed allocation returns NULL, and the copy into NULL fails next). A caller
  that cannot see stderr (Python) clears the record, makes its calls (for
  example runs a compiled function), and checks accy_runtime_last_error().
  ===----------------------------------------------------------------------===*/

enum { ERROR_MESSAGE_CAPACITY = 8192 };

static pthread_mutex_t error_mutex = PTHREAD_MUTEX_INITIALIZER;
static char first_error[ERROR_MESSAGE_CAPACITY];
static unsigned long error_count;

static void record_error(const char *message) {
  pthread_mutex_lock(&error_mutex);
  if (error_count++ == 0)
    snprintf(first_error, sizeof first_error, "%s", message);
  pthread_mutex_unlock(&error_mutex);
}

/* Writes "accy runtime: <formatted>" into `message`. */
static void format_message(char message[ERROR_MESSAGE_CAPACITY],
                           const char *format, va_list arguments) {
  static const char prefix[] = "accy runtime: ";
  memcpy(message, prefix, sizeof prefix);
  vsnprintf(message + sizeof prefix - 1,
            ERROR_MESSAGE_CAPACITY - (sizeof prefix - 1), format, arguments);
}

/* Prints "accy runtime: <formatted>" to stderr and records it. */
__attribute__((format(printf, 1, 2))) static void report(const char *format,
                                                         ...) {
  char message[ERROR_MESSAGE_CAPACITY];
  va_list arguments;
  va_start(arguments, format);
  format_message(message, format, arguments);
  va_end(arguments);
  fprintf(stderr, "%s\n", message);
  record_error(message);
}

/* The first failure's message since the last clear, or NULL when there was
   none. The text stays valid until accy_runtime_clear_error(). */
ACCY_EXPORT const char *accy_runtime_last_error(void) {
  pthread_mutex_lock(&error_mutex);
  const char *message = error_count ? first_error : NULL;
  pthread_mutex_unlock(&error_mutex);
  return message;
}

ACCY_EXPORT unsigned long accy_runtime_error_count(void) {
  pthread_mutex_lock(&error_mutex);
  unsigned long count = error_count;
  pthread_mutex_unlock(&error_mutex);
  return count;
}

ACCY_EXPORT void accy_runtime_clear_error(void) {
  pthread_mutex_lock(&error_mutex);
  error_count = 0;
  first_error[0] = '\0';
  pthread_mutex_unlock(&error_mutex);
}

/*===----------------------------------------------------------------------===
  The driver, loaded on first use
  ===----------------------------------------------------------------------===*/

/* One function pointer per driver entry point, named after its symbol. */
static struct {
#define DECLARE_DRIVER_POINTER(symbol, result, parameters)                     \
  result(*symbol) parameters;
  ACCY_CUDA_DRIVER_FUNCTIONS(DECLARE_DRIVER_POINTER)
#undef DECLARE_DRIVER_POINTER
} driver;

static pthread_once_t initialization = PTHREAD_ONCE_INIT;
/* Written once inside `initialization`; pthread_once publishes them.
   runtime_ready is atomic because mgpuSetDefaultDevice reads it without
   initializing the runtime. */
static atomic_bool runtime_ready;
static char initialization_failure[ERROR_MESSAGE_CAPACITY];
static CUdevice device;
static int device_ordinal;
static CUcontext primary_context;

/* The device mgpuSetDefaultDevice chose; read once, at initialization. */
static atomic_int requested_device_ordinal;

/* "CUDA_ERROR_NAME: description" for a driver result. */
typedef struct {
  char text[512];
} ResultDescription;

static ResultDescription describe(CUresult result) {
  ResultDescription description;
  const char *name = NULL;
  const char *text = NULL;
  if (driver.cuGetErrorName && driver.cuGetErrorName(result, &name))
    name = NULL;
  if (driver.cuGetErrorString && driver.cuGetErrorString(result, &text))
    text = NULL;
  if (name)
    snprintf(description.text, sizeof description.text, "%s: %s", name,
             text ? text : "(no description)");
  else
    snprintf(description.text, sizeof description.text,
             "CUDA error %d: (not a code this driver knows)", result);
  return description;
}

/*
 * Returns true when `result` is CUDA_SUCCESS; otherwise reports
 * "<call> failed: <NAME>: <description>" where <call> is formatted from
 * `call_format` (the driver function, and what it worked on).
 */
__attribute__((format(printf, 2, 3))) static bool
check(CUresult result, const char *call_format, ...) {
  if (result == CUDA_SUCCESS)
    return true;
  char call[1024];
  va_list arguments;
  va_start(arguments, call_format);
  vsnprintf(call, sizeof call, call_format, arguments);
  va_end(arguments);
  report("%s failed: %s", call, describe(result).text);
  return false;
}

/* Reports why the runtime cannot start and keeps the message for later calls. */
__attribute__((format(printf, 1, 2))) static void
fail_initialization(const char *format, ...) {
  va_list arguments;
  va_start(arguments, format);
  format_message(initialization_failure, format, arguments);
  va_end(arguments);
  fprintf(stderr, "%s\n", initialization_failure);
  record_error(initialization_failure);
}

/* Runs once per process: load the driver, resolve its entry points, retain the
   primary context of the default device. */
static void initialize_runtime(void) {
  const char *path = getenv(DRIVER_LIBRARY_VARIABLE);
  if (!path || !*path)
    path = DEFAULT_DRIVER_LIBRARY;

  void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *reason = dlerror();
    fail_initialization(
        "cannot load the CUDA driver library '%s' (set %s to the driver's "
        "path to use another one): %s",
        path, DRIVER_LIBRARY_VARIABLE, reason ? reason : "unknown dlopen error");
    return;
  }

  /* POSIX guarantees that a data pointer from dlsym converts to a function
     pointer. */
#define RESOLVE_DRIVER_POINTER(symbol, result, parameters)                     \
  driver.symbol = (result(*) parameters)dlsym(library, #symbol);               \
  if (!driver.symbol) {                                                        \
    memset(&driver, 0, sizeof driver);                                         \
    fail_initialization("the CUDA driver library '%s' does not export %s",     \
                        path, #symbol);                                        \
    dlclose(library);                                                          \
    return;                                                                    \
  }
  ACCY_CUDA_DRIVER_FUNCTIONS(RESOLVE_DRIVER_POINTER)
#undef RESOLVE_DRIVER_POINTER

  device_ordinal = atomic_load(&requested_device_ordinal);
  CUresult result = driver.cuInit(0);
  if (result == CUDA_SUCCESS)
    result = driver.cuDeviceGet(&device, device_ordinal);
  if (result == CUDA_SUCCESS)
    result = driver.cuDevicePrimaryCtxRetain(&primary_context, device);
  if (result != CUDA_SUCCESS) {
    fail_initialization("cannot initialize CUDA device %d with '%s': %s",
                        device_ordinal, path, describe(result).text);
    return;
  }
  /* The library stays loaded for the life of the process, and the primary
     context stays retained: both are released by process exit. */
  atomic_store(&runtime_ready, true);
}

/*
 * Every ABI entry point starts here. Initializes the runtime on first use and
 * makes the primary context current on the calling thread when it is not.
 * Returns false when the runtime cannot run (the reason recorded).
 */
static bool enter(void) {
  pthread_once(&initialization, initialize_runtime);
  if (!atomic_load(&runtime_ready)) {
    /* Printed once, at initialization; recorded again for each later call so
       that a caller that cleared the record still sees why nothing ran. */
    record_error(initialization_failure);
    return false;
  }
  CUcontext current = NULL;
  if (driver.cuCtxGetCurrent(&current) == CUDA_SUCCESS &&
      current == primary_context)
    return true;
  return check(driver.cuCtxSetCurrent(primary_context), "cuCtxSetCurrent");
}

/*===----------------------------------------------------------------------===
  Modules and kernels
  ===----------------------------------------------------------------------===*/

/* Loads a cubin or fatbin (the driver reads its size from its header;
   `gpuBlobSize` is not needed). Called by the global constructor that
   gpu-to-llvm emits for each gpu.binary. Returns NULL on failure. */
ACCY_EXPORT CUmodule mgpuModuleLoad(void *data, size_t gpuBlobSize) {
  (void)gpuBlobSize;
  if (!enter())
    return NULL;
  CUmodule module = NULL;
  if (!check(driver.cuModuleLoadData(&module, data), "cuModuleLoadData"))
    return NULL;
  return module;
}

/*
 * Compiles NUL-terminated PTX with the driver's JIT at `optLevel` (0-4) and
 * loads it. LLVM 23 added a trailing `size_t assemblySize` argument to this
 * function; PTX is NUL-terminated, so this implementation does not need it,
 * and the C calling conventions accy targets (x86-64 System V, AArch64) let a
 * caller pass an argument the callee does not declare.
 */
ACCY_EXPORT CUmodule mgpuModuleLoadJIT(void *data, int optLevel) {
  if (!enter())
    return NULL;
  char jit_log[4096] = "";
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_OPTIMIZATION_LEVEL};
  /* JIT option values are passed as pointers; integers are cast into them. */
  void *values[] = {jit_log, (void *)(uintptr_t)sizeof jit_log,
                    (void *)(uintptr_t)optLevel};
  CUmodule module = NULL;
  CUresult result = driver.cuModuleLoadDataEx(
      &module, data, sizeof options / sizeof options[0], options, values);
  if (result != CUDA_SUCCESS) {
    jit_log[sizeof jit_log - 1] = '\0';
    report("cuModuleLoadDataEx (PTX JIT at -O%d) failed: %s%s%s", optLevel,
           describe(result).text, jit_log[0] ? "\nJIT log:\n" : "", jit_log);
    return NULL;
  }
  return module;
}

/* Called by the global destructor that gpu-to-llvm emits. */
ACCY_EXPORT void mgpuModuleUnload(CUmodule module) {
  if (!module || !enter())
    return;
  check(driver.cuModuleUnload(module), "cuModuleUnload");
}

ACCY_EXPORT CUfunction mgpuModuleGetFunction(CUmodule module,
                                             const char *name) {
  if (!enter())
    return NULL;
  CUfunction function = NULL;
  if (!check(driver.cuModuleGetFunction(&function, module, name),
             "cuModuleGetFunction(\"%s\")", name ? name : "(null)"))
    return NULL;
  return function;
}

static bool is_launch_dimension(intptr_t value) {
  return value >= 1 && (uintmax_t)value <= UINT_MAX;
}

/*
 * Launches `function`. The grid and block sizes are intptr_t because that is
 * MLIR's `index` type; the driver takes unsigned int. `params` holds one
 * pointer per kernel argument (the driver knows their sizes from the kernel,
 * so `paramsCount` is informational). Dynamic shared memory above the default
 * 48 KiB must be opted into per function, as upstream does.
 */
ACCY_EXPORT void mgpuLaunchKernel(CUfunction function, intptr_t gridX,
                                  intptr_t gridY, intptr_t gridZ,
                                  intptr_t blockX, intptr_t blockY,
                                  intptr_t blockZ, int32_t smem,
                                  CUstream stream, void **params, void **extra,
                                  size_t paramsCount) {
  (void)paramsCount;
  if (!enter())
    return;
  if (!is_launch_dimension(gridX) || !is_launch_dimension(gridY) ||
      !is_launch_dimension(gridZ) || !is_launch_dimension(blockX) ||
      !is_launch_dimension(blockY) || !is_launch_dimension(blockZ) ||
      smem < 0) {
    report("mgpuLaunchKernel: invalid launch configuration grid=%jd,%jd,%jd "
           "block=%jd,%jd,%jd dynamic shared memory=%d bytes (sizes must be "
           "in 1..%u, shared memory non-negative)",
           (intmax_t)gridX, (intmax_t)gridY, (intmax_t)gridZ, (intmax_t)blockX,
           (intmax_t)blockY, (intmax_t)blockZ, (int)smem, UINT_MAX);
    return;
  }
  if (smem > 0 &&
      !check(driver.cuFuncSetAttribute(
                 function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                 smem),
             "cuFuncSetAttribute(max dynamic shared memory = %d bytes)",
             (int)smem))
    return;
  check(driver.cuLaunchKernel(function, (unsigned)gridX, (unsigned)gridY,
                              (unsigned)gridZ, (unsigned)blockX,
                              (unsigned)blockY, (unsigned)blockZ,
                              (unsigned)smem, stream, params, extra),
        "cuLaunchKernel(grid=%jd,%jd,%jd block=%jd,%jd,%jd)", (intmax_t)gridX,
        (intmax_t)gridY, (intmax_t)gridZ, (intmax_t)blockX, (intmax_t)blockY,
        (intmax_t)blockZ);
}

/*===----------------------------------------------------------------------===
  Streams and events
  ===----------------------------------------------------------------------===*/

/* A non-blocking stream: it does not synchronize with the legacy NULL stream. */
ACCY_EXPORT CUstream mgpuStreamCreate(void) {
  if (!enter())
    return NULL;
  CUstream stream = NULL;
  if (!check(driver.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING),
             "cuStreamCreate"))
    return NULL;
  return stream;
}

ACCY_EXPORT void mgpuStreamDestroy(CUstream stream) {
  if (!enter())
    return;
  check(driver.cuStreamDestroy_v2(stream), "cuStreamDestroy_v2");
}

ACCY_EXPORT void mgpuStreamSynchronize(CUstream stream) {
  if (!enter())
    return;
  check(driver.cuStreamSynchronize(stream), "cuStreamSynchronize");
}

ACCY_EXPORT void mgpuStreamWaitEvent(CUstream stream, CUevent event) {
  if (!enter())
    return;
  check(driver.cuStreamWaitEvent(stream, event, 0), "cuStreamWaitEvent");
}

/* Events only order work between streams, so they record no timing. */
ACCY_EXPORT CUevent mgpuEventCreate(void) {
  if (!enter())
    return NULL;
  CUevent event = NULL;
  if (!check(driver.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING),
             "cuEventCreate"))
    return NULL;
  return event;
}

ACCY_EXPORT void mgpuEventDestroy(CUevent event) {
  if (!enter())
    return;
  check(driver.cuEventDestroy_v2(event), "cuEventDestroy_v2");
}

ACCY_EXPORT void mgpuEventSynchronize(CUevent event) {
  if (!enter())
    return;
  check(driver.cuEventSynchronize(event), "cuEventSynchronize");
}

ACCY_EXPORT void mgpuEventRecord(CUevent event, CUstream stream) {
  if (!enter())
    return;
  check(driver.cuEventRecord(event, stream), "cuEventRecord");
}

/*===----------------------------------------------------------------------===
  Memory
  ===----------------------------------------------------------------------===*/

/*
 * Allocates device memory, or managed memory reachable from host and device
 * when `isHostShared` (gpu.alloc host_shared). The allocation is synchronous:
 * `stream` is ignored, as upstream does. Zero bytes give NULL without a driver
 * call (the driver rejects empty allocations). Returns NULL on failure.
 */
ACCY_EXPORT void *mgpuMemAlloc(uint64_t sizeBytes, CUstream stream,
                               bool isHostShared) {
  (void)stream;
  if (sizeBytes == 0 || !enter())
    return NULL;
  const char *kind = isHostShared ? "managed" : "device";
  const char *call = isHostShared ? "cuMemAllocManaged" : "cuMemAlloc_v2";
  CUdeviceptr pointer = 0;
  CUresult result =
      isHostShared
          ? driver.cuMemAllocManaged(&pointer, sizeBytes, CU_MEM_ATTACH_GLOBAL)
          : driver.cuMemAlloc_v2(&pointer, sizeBytes);
  if (result == CUDA_ERROR_OUT_OF_MEMORY) {
    report("cannot allocate %llu bytes of %s memory: %s (%s)",
           (unsigned long long)sizeBytes, kind, describe(result).text, call);
    return NULL;
  }
  if (!check(result, "%s(%llu bytes)", call, (unsigned long long)sizeBytes))
    return NULL;
  return (void *)(uintptr_t)pointer;
}

/* Frees synchronously (`stream` is ignored, as upstream does); NULL is a
   no-op, matching mgpuMemAlloc of zero bytes. */
ACCY_EXPORT void mgpuMemFree(void *ptr, CUstream stream) {
  (void)stream;
  if (!ptr || !enter())
    return;
  check(driver.cuMemFree_v2((CUdeviceptr)(uintptr_t)ptr),
        "cuMemFree_v2(%p)", ptr);
}

/* Copies `sizeBytes` on `stream`. Either side may be host or device memory:
   with unified addressing the driver infers the direction from the pointers. */
ACCY_EXPORT void mgpuMemcpy(void *dst, void *src, size_t sizeBytes,
                            CUstream stream) {
  if (sizeBytes == 0 || !enter())
    return;
  check(driver.cuMemcpyAsync((CUdeviceptr)(uintptr_t)dst,
                             (CUdeviceptr)(uintptr_t)src, sizeBytes, stream),
        "cuMemcpyAsync(dst=%p, src=%p, %zu bytes)", dst, src, sizeBytes);
}

/* Sets `count` 32-bit words at `dst` to `value` on `stream`. */
ACCY_EXPORT void mgpuMemset32(void *dst, unsigned int value, size_t count,
                              CUstream stream) {
  if (count == 0 || !enter())
    return;
  check(driver.cuMemsetD32Async((CUdeviceptr)(uintptr_t)dst, value, count,
                                stream),
        "cuMemsetD32Async(%p, %zu words)", dst, count);
}

/* Sets `count` 16-bit words at `dst` to `value` on `stream`. */
ACCY_EXPORT void mgpuMemset16(void *dst, unsigned short value, size_t count,
                              CUstream stream) {
  if (count == 0 || !enter())
    return;
  check(driver.cuMemsetD16Async((CUdeviceptr)(uintptr_t)dst, value, count,
                                stream),
        "cuMemsetD16Async(%p, %zu words)", dst, count);
}

/* Page-locks host memory so that the device can reach it. */
ACCY_EXPORT void mgpuMemHostRegister(void *ptr, uint64_t sizeBytes) {
  if (!enter())
    return;
  check(driver.cuMemHostRegister_v2(ptr, sizeBytes, 0),
        "cuMemHostRegister_v2(%p, %llu bytes)", ptr,
        (unsigned long long)sizeBytes);
}

ACCY_EXPORT void mgpuMemHostUnregister(void *ptr) {
  if (!enter())
    return;
  check(driver.cuMemHostUnregister(ptr), "cuMemHostUnregister(%p)", ptr);
}

/*
 * A ranked memref descriptor as MLIR passes it to C (StridedMemRefType<T, N>):
 * the allocated and aligned pointers, the offset in elements, then N sizes
 * followed by N strides.
 */
typedef struct {
  char *allocated;
  char *aligned;
  int64_t offset;
  int64_t sizes_then_strides[];
} MemRefDescriptor;

static void *memref_start(const MemRefDescriptor *descriptor,
                          int64_t elementSizeBytes) {
  return descriptor->aligned + descriptor->offset * elementSizeBytes;
}

/* Registers the memory of a densely packed memref of rank `rank`. */
ACCY_EXPORT void mgpuMemHostRegisterMemRef(int64_t rank,
                                           MemRefDescriptor *descriptor,
                                           int64_t elementSizeBytes) {
  const int64_t *sizes = descriptor->sizes_then_strides;
  const int64_t *strides = sizes + rank;
  int64_t dense_stride = 1;
  for (int64_t dimension = rank - 1; dimension >= 0; --dimension) {
    if (sizes[dimension] > 1 && strides[dimension] != dense_stride) {
      report("mgpuMemHostRegisterMemRef: only densely packed memrefs can be "
             "registered; dimension %lld has stride %lld, not %lld",
             (long long)dimension, (long long)strides[dimension],
             (long long)dense_stride);
      return;
    }
    dense_stride *= sizes[dimension];
  }
  uint64_t size_bytes = (uint64_t)dense_stride * (uint64_t)elementSizeBytes;
  if (size_bytes == 0)
    return;
  mgpuMemHostRegister(memref_start(descriptor, elementSizeBytes), size_bytes);
}

ACCY_EXPORT void mgpuMemHostUnregisterMemRef(int64_t rank,
                                             MemRefDescriptor *descriptor,
                                             int64_t elementSizeBytes) {
  (void)rank;
  mgpuMemHostUnregister(memref_start(descriptor, elementSizeBytes));
}

/*===----------------------------------------------------------------------===
  Devices
  ===----------------------------------------------------------------------===*/

/*
 * Chooses the device the runtime binds on first use. The runtime serves one
 * device per process: a different device requested after that is reported and
 * ignored (upstream ignores it silently). A call racing with the first use on
 * another thread may or may not take effect.
 */
ACCY_EXPORT void mgpuSetDefaultDevice(int32_t device_to_use) {
  atomic_store(&requested_device_ordinal, device_to_use);
  /* Does not start the runtime. device_ordinal is written before runtime_ready
     is set (sequentially consistent atomics), so it is valid when read here. */
  if (atomic_load(&runtime_ready) && device_to_use != device_ordinal)
    report("mgpuSetDefaultDevice(%d): the runtime already uses device %d; "
           "one device per process is supported",
           (int)device_to_use, device_ordinal);
}

/* The number of streaming multiprocessors of the runtime's device (the
   `sm_count` of workspace expressions), or -1 with the failure recorded. */
ACCY_EXPORT int accy_runtime_device_sm_count(void) {
  if (!enter())
    return -1;
  int count = 0;
  if (!check(driver.cuDeviceGetAttribute(
                 &count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device),
             "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)"))
    return -1;
  return count;
}
