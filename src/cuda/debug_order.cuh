// Ordering check of the CUDA executor (exec.cuh): the happens-before relation of the work a
// call queues, by vector clocks. Behind the one debug switch VIDK_CUDA_DEBUG
// (cuda_common.cuh, docs/CUDA.md): with 0 every function here does nothing.
//
// The emulation runs every copy and kernel at once, in the order the host queues them, so
// it cannot show a missing cross-stream dependency; the device can (cuda planes on 1080p
// qp37 8x8: a plane no block touches came back before it had gone up). So every call
// also keeps, while it queues work, the happens-before relation that CUDA guarantees
// between the operations (the host thread and each stream are "threads" with a vector
// clock: work queued on a stream follows what the host did before queueing it and what
// came earlier on that stream; cudaStreamWaitEvent joins the clock the event captured;
// cudaEventSynchronize / a completed cudaEventQuery / a stream synchronisation join it
// into the host's), and every access to a tracked buffer (order_access) is checked against
// the earlier accesses: two accesses of which one writes must be ordered. An unordered
// pair fails the call (VIDK_ERR(EIO), logged), on the device and in the emulation alike, so
// the emulated tests check the very sequence of copies, kernels, records and waits that
// the device runs, whatever the timing. Kernels of chunks that write disjoint blocks of a
// buffer (ACC_BLOCKS) are unordered among themselves, ordered against whole-buffer copies.
//
// A family opts in by naming its tracked buffers (ExecFamily.n_res, exec.cuh); the h264
// family does.
#ifndef VIDK_CUDA_DEBUG_ORDER_CUH
#define VIDK_CUDA_DEBUG_ORDER_CUH

#include "cuda_common.cuh"

namespace vidk_cux {

constexpr int kOrderClocks = VIDK_CUDA_MAX_STREAMS + 1;
constexpr int kOrderHost = VIDK_CUDA_MAX_STREAMS; // the host thread's clock
constexpr int kOrderMaxRes = 16;                  // tracked buffers of a family

enum OrderAcc { ACC_READ, ACC_WRITE, ACC_BLOCKS };

struct OrderCheck {
    bool on;
    uint32_t vc[kOrderClocks][kOrderClocks];      // vc[t][k]: what thread t knows of k
    uint32_t (*evc)[kOrderClocks];                // clock captured by event i
    uint32_t last[3][kOrderMaxRes][kOrderClocks]; // last read / write / blocks access
};

// Zeroed, on when VIDK_CUDA_DEBUG and the family tracks buffers.
void order_init(OrderCheck *o, bool on);
void order_free(OrderCheck *o);
// Room for the clocks of events 0 .. n - 1: 0 or VIDK_ERR(ENOMEM).
int order_events(OrderCheck *o, int n);
// Work queued now on stream s follows everything the host did so far.
void order_queue(OrderCheck *o, int s);
// Event ev recorded on stream s captures the stream's clock.
void order_record(OrderCheck *o, int ev, int s);
// Stream s waits for event ev.
void order_wait(OrderCheck *o, int s, int ev);
// The host has seen event ev complete.
void order_host_sees(OrderCheck *o, int ev);
// The host has synchronised streams 0 .. ns - 1.
void order_sync_all(OrderCheck *o, int ns);
// Access `acc` of buffer `res` by thread t (a stream, or kOrderHost), as queued now: 0,
// or VIDK_ERR(EIO) (logged as "cuda <family>: unordered accesses of the <name>: ...").
int order_access(OrderCheck *o, const VidkContext *ctx, const char *family,
                 const char *const *res_names, int t, int res, OrderAcc acc);

} // namespace vidk_cux

#endif
