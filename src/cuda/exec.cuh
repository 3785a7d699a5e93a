// The executor of the CUDA families (h264, hevc, me.cu, sad_frame.cu): a call's streams,
// events, slot buffers, copies and launches, on the device or in the host emulation (the same
// calls with memcpy for copies, no CUDA call, kernels run by the family's *_emu.cuh), and the
// ordering check of debug_order.cuh. Written once; a family keeps only what is its own
// (kernel tables, packing, options).
//
// A call:
//   Exec x;
//   exec_init(&x, ctx, emu, &kFamily, max_events);  // nothing allocated yet
//   ... exec_use_streams, buf, h2d / d2h, event_record / event_wait / event_sync, ...
//   ... stage / timing_start / finish (the stage timing of cuda_common.cuh) ...
//   exec_end(&x);                                    // always, on every path after init
//
// Every function returns 0 (or an index / a flag where it says so) or a negative vidkern
// code; CUDA failures are logged by CUDA_CHECK (cuda_common.cuh).
#ifndef VIDK_CUDA_EXEC_CUH
#define VIDK_CUDA_EXEC_CUH

#include "cuda_common.cuh"
#include "debug_order.cuh"

namespace vidk_cux {

// What differs between the families that share the executor.
struct ExecFamily {
    const char *name;             // "h264": log messages
    int slot0, nslots;            // the family's buffer slots: slot0 .. slot0 + nslots - 1
    size_t align;                 // slot buffer sizes round up to this (and >= it)
    int n_res;                    // buffers the ordering check tracks (0: no check)
    const char *const *res_names; // their names, for the log
};

constexpr int kExecMaxSlots = 24; // a family owns 24 slots (VIDK_SLOT_*_FIRST)

struct Exec {
    VidkContext *ctx;
    const ExecFamily *fam;
    bool emu;
    int ns; // streams used
    cudaStream_t st[VIDK_CUDA_MAX_STREAMS];
    cudaEvent_t *ev; // events of this call (cap_ev, allocated by events_alloc or at
    bool *ev_done;   // the first event_record), each recorded once
    int nev, cap_ev;
    bool timed;                   // timing_start done
    void *ebuf[2][kExecMaxSlots]; // emulation buffers: device, host
    size_t ecap[2][kExecMaxSlots];
    VidkThreadPool *own_pool; // emulation: the host staging pool of this call
    OrderCheck ord;           // happens-before of the queued work
};

// x for one call of family fam; max_events: the event capacity (0: events_alloc sets it).
void exec_init(Exec *x, VidkContext *ctx, bool emu, const ExecFamily *fam, int max_events);

// Every stream used idle, events destroyed, emulation buffers and the call's pool freed.
// Errors are ignored: this runs on the way out, after the result is known.
void exec_end(Exec *x);

// Use the context's streams 0 .. n - 1 (1 <= n <= VIDK_CUDA_MAX_STREAMS; the emulation
// has no streams, only their indices).
void exec_use_streams(Exec *x, int n);

// Slot buffer of at least `bytes` (rounded up to the family's alignment, and at least that:
// graph copies need a non-empty source). The emulation's are poisoned when (re)allocated.
int exec_buf(Exec *x, int slot, bool host, size_t bytes, void **p);
template <typename T> int buf(Exec *x, int slot, bool host, size_t bytes, T **p) {
    void *v = nullptr;
    const int err = exec_buf(x, slot, host, bytes, &v);
    *p = static_cast<T *>(v);
    return err;
}

// Asynchronous copies and memset on stream s (n == 0: nothing).
int h2d(Exec *x, void *dst, const void *src, size_t n, int s);
int d2h(Exec *x, void *dst, const void *src, size_t n, int s);
int dmemset(Exec *x, void *dst, size_t n, int s, int value = 0); // bytes = value (zeros)
// Row-by-row copies between a host picture and a packed device plane (up: host to device).
int copy_2d(Exec *x, bool up, void *dst, size_t dpitch, const void *src, size_t spitch,
            size_t width, size_t rows, int s);
int h2d_2d(Exec *x, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
           size_t rows, int s);
int d2h_2d(Exec *x, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
           size_t rows, int s);

// Stage timing (cuda_common.cuh) on stream s; nothing in the emulation.
int stage(Exec *x, VidkCudaStage st, bool begin, int s, size_t bytes);
int timing_start(Exec *x);
// Synchronise every stream used, then close the timing.
int finish(Exec *x);
// Synchronise stream s (device only).
int exec_sync(Exec *x, int s);

// Device launches: cudaLaunchKernel of fn on stream s (opting in to more than 48 KiB of
// dynamic shared memory first), and the launch check after a <<<>>> launch.
int exec_launch(Exec *x, const void *fn, unsigned grid, int threads, size_t smem, void **args,
                int s);
int exec_launched(Exec *x);

// Events. Every event is made for one record and never recorded again (no reuse before a
// wait is queued), and waits / synchronisations accept only events this call recorded (a
// cudaStreamWaitEvent on an event never recorded would be a silent no-op).
int events_alloc(Exec *x, int n);
// A new event recorded on stream s: its index, or an error.
int event_record(Exec *x, int s);
bool event_ok(const Exec *x, int ev);
// Stream s waits for event ev.
int event_wait(Exec *x, int s, int ev);
// 1 when event ev has completed, 0 when not yet, or an error.
int event_query(Exec *x, int ev);
int event_sync(Exec *x, int ev);

// ---- lower-level pieces, for streams and events that outlive one call (the coding loop's
// encoder, encode.cu) and for the Exec above: every stream and event of the CUDA code but
// the context's own (cuda_backend.cu) is created, timed and destroyed here.
// A non-blocking stream (high: at the device's highest priority, else its lowest); 0 or an
// error (logged).
int stream_create(const VidkContext *ctx, cudaStream_t *s, bool high = false);
// An event with timing data (timing) or without (cudaEventDisableTiming); 0 or an error.
int event_create(const VidkContext *ctx, cudaEvent_t *e, bool timing);
// Destroy what was created (nullptr: nothing) and clear it; errors are ignored.
void stream_destroy(cudaStream_t *s);
void event_destroy(cudaEvent_t *e);
// Milliseconds from timing event a to b (both completed); 0 on any error (cleared).
float event_elapsed(cudaEvent_t a, cudaEvent_t b);

// Access `acc` of tracked buffer `res` by stream t (or kOrderHost), as queued now: 0, or
// VIDK_ERR(EIO) (logged) when an earlier conflicting access is not ordered before it
// (debug_order.cuh; always 0 when VIDK_CUDA_DEBUG is 0).
int track(Exec *x, int t, int res, OrderAcc acc);

} // namespace vidk_cux

#endif
