// The executor of the CUDA families (exec.cuh).
#include "exec.cuh"
#include "emu.cuh"

#include <stdlib.h>
#include <string.h>

namespace vidk_cux {

namespace {

size_t round_up(size_t n, size_t a) {
    return (n + a - 1) / a * a;
}

} // namespace

void exec_init(Exec *x, VidkContext *ctx, bool emu, const ExecFamily *fam, int max_events) {
    memset(x, 0, sizeof(*x));
    x->ctx = ctx;
    x->fam = fam;
    x->emu = emu;
    x->ns = 1;
    x->cap_ev = max_events;
    order_init(&x->ord, fam->n_res > 0);
}

void exec_end(Exec *x) {
    if (!x->emu) {
        for (int i = 0; i < x->ns; i++)
            if (x->st[i]) (void)cudaStreamSynchronize(x->st[i]);
        for (int i = 0; i < x->nev; i++)
            event_destroy(&x->ev[i]);
        (void)cudaGetLastError();
    }
    free(x->ev);
    free(x->ev_done);
    x->ev = nullptr;
    x->ev_done = nullptr;
    x->nev = 0;
    order_free(&x->ord);
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < kExecMaxSlots; i++)
            free(x->ebuf[h][i]);
    memset(x->ebuf, 0, sizeof(x->ebuf));
    vidk_pool_destroy(&x->own_pool);
}

void exec_use_streams(Exec *x, int n) {
    x->ns = n;
    if (!x->emu)
        for (int i = 0; i < n; i++)
            x->st[i] = vidk_cuda_stream_at(x->ctx, i);
}

int exec_buf(Exec *x, int slot, bool host, size_t bytes, void **p) {
    const size_t a = x->fam->align;
    bytes = round_up(bytes < a ? a : bytes, a);
    if (!x->emu)
        return host ? vidk_cuda_host_buffer(x->ctx, slot, bytes, p)
                    : vidk_cuda_device_buffer(x->ctx, slot, bytes, p);
    const int i = slot - x->fam->slot0, h = host;
    if (x->ecap[h][i] < bytes) {
        free(x->ebuf[h][i]);
        x->ebuf[h][i] = aligned_alloc(a, bytes);
        x->ecap[h][i] = x->ebuf[h][i] ? bytes : 0;
        if (!x->ebuf[h][i]) return VIDK_ERR(ENOMEM);
        emu_poison(x->ebuf[h][i], bytes, kPoisonBuffer); // reading unwritten bytes shows
    }
    *p = x->ebuf[h][i];
    return 0;
}

// One asynchronous copy on stream s (a plain memcpy in the emulation).
static int copy_async(Exec *x, void *dst, const void *src, size_t n, int s,
                      cudaMemcpyKind kind) {
    const VidkContext *ctx = x->ctx;
    int err = 0;
    if (!n) return 0;
    if (x->emu) {
        memcpy(dst, src, n);
        return 0;
    }
    CUDA_CHECK(cudaMemcpyAsync(dst, src, n, kind, x->st[s]));
cleanup:
    return err;
}

int h2d(Exec *x, void *dst, const void *src, size_t n, int s) {
    return copy_async(x, dst, src, n, s, cudaMemcpyHostToDevice);
}

int d2h(Exec *x, void *dst, const void *src, size_t n, int s) {
    return copy_async(x, dst, src, n, s, cudaMemcpyDeviceToHost);
}

int dmemset(Exec *x, void *dst, size_t n, int s, int value) {
    const VidkContext *ctx = x->ctx;
    int err = 0;
    if (x->emu) {
        memset(dst, value, n);
        return 0;
    }
    CUDA_CHECK(cudaMemsetAsync(dst, value, n, x->st[s]));
cleanup:
    return err;
}

int copy_2d(Exec *x, bool up, void *dst, size_t dpitch, const void *src, size_t spitch,
            size_t width, size_t rows, int s) {
    const VidkContext *ctx = x->ctx;
    int err = 0;
    if (!width || !rows) return 0;
    if (dpitch == width && spitch == width) // contiguous
        return up ? h2d(x, dst, src, width * rows, s) : d2h(x, dst, src, width * rows, s);
    if (x->emu) {
        for (size_t r = 0; r < rows; r++)
            memcpy(static_cast<uint8_t *>(dst) + r * dpitch,
                   static_cast<const uint8_t *>(src) + r * spitch, width);
        return 0;
    }
    CUDA_CHECK(cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, rows,
                                 up ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost,
                                 x->st[s]));
cleanup:
    return err;
}

int h2d_2d(Exec *x, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
           size_t rows, int s) {
    return copy_2d(x, true, dst, dpitch, src, spitch, width, rows, s);
}

int d2h_2d(Exec *x, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
           size_t rows, int s) {
    return copy_2d(x, false, dst, dpitch, src, spitch, width, rows, s);
}

int stage(Exec *x, VidkCudaStage st, bool begin, int s, size_t bytes) {
    if (x->emu) return 0;
    return begin ? vidk_cuda_stage_begin(x->ctx, st, x->st[s])
                 : vidk_cuda_stage_end(x->ctx, st, x->st[s], bytes);
}

int timing_start(Exec *x) {
    if (x->emu) return 0;
    const int err = vidk_cuda_timing_start(x->ctx, x->st[0]);
    x->timed = err == 0;
    return err;
}

int finish(Exec *x) {
    const VidkContext *ctx = x->ctx;
    int err = 0;
    order_sync_all(&x->ord, x->ns);
    if (x->emu) return 0;
    for (int i = 0; i < x->ns; i++)
        CUDA_CHECK(cudaStreamSynchronize(x->st[i]));
    return vidk_cuda_timing_stop(x->ctx);
cleanup:
    return err;
}

int exec_sync(Exec *x, int s) {
    const VidkContext *ctx = x->ctx;
    int err = 0;
    CUDA_CHECK(cudaStreamSynchronize(x->st[s]));
cleanup:
    return err;
}

int exec_launch(Exec *x, const void *fn, unsigned grid, int threads, size_t smem, void **args,
                int s) {
    const VidkContext *ctx = x->ctx;
    int err = 0;
    if (smem > 48 * 1024)
        CUDA_CHECK(
            cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    CUDA_CHECK(cudaLaunchKernel(fn, dim3(grid), dim3((unsigned)threads), args, smem, x->st[s]));
    CUDA_CHECK_LAUNCH();
cleanup:
    return err;
}

int exec_launched(Exec *x) {
    const VidkContext *ctx = x->ctx;
    int err = 0;
    CUDA_CHECK_LAUNCH();
cleanup:
    return err;
}

int events_alloc(Exec *x, int n) {
    int err;
    free(x->ev);
    free(x->ev_done);
    x->ev = static_cast<cudaEvent_t *>(calloc((size_t)(n > 0 ? n : 1), sizeof(cudaEvent_t)));
    x->ev_done = static_cast<bool *>(calloc((size_t)(n > 0 ? n : 1), sizeof(bool)));
    x->cap_ev = 0;
    if (!x->ev || !x->ev_done) return VIDK_ERR(ENOMEM);
    if ((err = order_events(&x->ord, n)) < 0) return err;
    x->cap_ev = n;
    return 0;
}

int event_record(Exec *x, int s) {
    const VidkContext *ctx = x->ctx;
    int err = 0;
    // A family that gave its capacity to exec_init gets its arrays at the first record.
    if (!x->ev && x->cap_ev > 0 && (err = events_alloc(x, x->cap_ev)) < 0) return err;
    if (x->nev >= x->cap_ev) return VIDK_ERR(EINVAL);
    const int i = x->nev;
    order_record(&x->ord, i, s);
    if (x->emu) {
        x->ev_done[x->nev++] = true;
        return i;
    }
    VIDK_TRY(event_create(ctx, &x->ev[i], false));
    x->nev++;
    CUDA_CHECK(cudaEventRecord(x->ev[i], x->st[s]));
    x->ev_done[i] = true;
    return i;
cleanup:
    return err;
}

bool event_ok(const Exec *x, int ev) {
    return ev >= 0 && ev < x->nev && x->ev_done[ev];
}

int event_wait(Exec *x, int s, int ev) {
    const VidkContext *ctx = x->ctx;
    int err = 0;
    if (!event_ok(x, ev) || s < 0 || s >= x->ns) return VIDK_ERR(EINVAL);
    order_wait(&x->ord, s, ev);
    if (x->emu) return 0;
    CUDA_CHECK(cudaStreamWaitEvent(x->st[s], x->ev[ev], 0));
cleanup:
    return err;
}

int event_query(Exec *x, int ev) {
    const VidkContext *ctx = x->ctx;
    int err = 0;
    if (!event_ok(x, ev)) return VIDK_ERR(EINVAL);
    if (x->emu) {
        order_host_sees(&x->ord, ev);
        return 1;
    }
    const cudaError_t e = cudaEventQuery(x->ev[ev]);
    if (e == cudaErrorNotReady) {
        (void)cudaGetLastError(); // not an error; keep it out of the next launch check
        return 0;
    }
    CUDA_CHECK(e);
    order_host_sees(&x->ord, ev);
    return 1;
cleanup:
    return err;
}

int event_sync(Exec *x, int ev) {
    const VidkContext *ctx = x->ctx;
    int err = 0;
    if (!event_ok(x, ev)) return VIDK_ERR(EINVAL);
    if (!x->emu) CUDA_CHECK(cudaEventSynchronize(x->ev[ev]));
    order_host_sees(&x->ord, ev);
cleanup:
    return err;
}

int stream_create(const VidkContext *ctx, cudaStream_t *s, bool high) {
    int err = 0, least = 0, greatest = 0;
    if (high) CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    CUDA_CHECK(cudaStreamCreateWithPriority(s, cudaStreamNonBlocking, high ? greatest : least));
cleanup:
    return err;
}

int event_create(const VidkContext *ctx, cudaEvent_t *e, bool timing) {
    int err = 0;
    CUDA_CHECK(cudaEventCreateWithFlags(e, timing ? cudaEventDefault : cudaEventDisableTiming));
cleanup:
    return err;
}

void stream_destroy(cudaStream_t *s) {
    if (*s) (void)cudaStreamDestroy(*s);
    *s = nullptr;
}

void event_destroy(cudaEvent_t *e) {
    if (*e) (void)cudaEventDestroy(*e);
    *e = nullptr;
}

float event_elapsed(cudaEvent_t a, cudaEvent_t b) {
    float ms = 0;
    if (cudaEventElapsedTime(&ms, a, b) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return ms;
}

int track(Exec *x, int t, int res, OrderAcc acc) {
    return order_access(&x->ord, x->ctx, x->fam->name, x->fam->res_names, t, res, acc);
}

} // namespace vidk_cux
