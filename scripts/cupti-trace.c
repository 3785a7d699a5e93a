/* cupti-trace.c: a timeline of every kernel, copy and memset a CUDA program runs (and, with
 * CUPTI_TRACE_API=1, every runtime API call of its host threads), as CSV, through CUPTI's
 * activity API loaded by the driver (CUDA_INJECTION64_PATH): no change to the program.
 *
 *   cc -shared -fPIC -O2 -I$CUDA/include scripts/cupti-trace.c -o cupti-trace.so \
 *      -L$CUDA/lib64 -lcupti
 *   CUDA_INJECTION64_PATH=$PWD/cupti-trace.so CUPTI_TRACE_OUT=t.csv vidkern encode ...
 *   scripts/cupti-trace.py t.csv
 *
 * Rows: kind (K kernel, M copy, S memset, R runtime call), start and end (ns, one clock for
 * device and host), stream (R: host thread), grid blocks / bytes (R: correlation id), block
 * threads, name. Built against CUDA 13 (CUpti_ActivityKernel10). Nsight Systems does this
 * where it runs; on the GPU machine it does not (KINDS.md). */
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>

static FILE *out;

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size, size_t *max_records) {
    *size = 8u << 20;
    *buf = (uint8_t *)aligned_alloc(8, *size);
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                                      size_t valid) {
    CUpti_Activity *r = NULL;
    (void)ctx, (void)stream, (void)size;
    while (out && cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
        if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
            const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)r;
            fprintf(out, "K,%llu,%llu,%u,%u,%u,%s\n", (unsigned long long)k->start,
                    (unsigned long long)k->end, k->streamId, k->gridX * k->gridY * k->gridZ,
                    k->blockX * k->blockY * k->blockZ, k->name ? k->name : "?");
        } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
            const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)r;
            fprintf(out, "M,%llu,%llu,%u,%llu,0,memcpy%u\n", (unsigned long long)m->start,
                    (unsigned long long)m->end, m->streamId, (unsigned long long)m->bytes,
                    (unsigned)m->copyKind);
        } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
            const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)r;
            fprintf(out, "S,%llu,%llu,%u,%llu,0,memset\n", (unsigned long long)m->start,
                    (unsigned long long)m->end, m->streamId, (unsigned long long)m->bytes);
        } else if (r->kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
            const CUpti_ActivityAPI *a = (const CUpti_ActivityAPI *)r;
            const char *name = NULL;
            if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, a->cbid, &name) !=
                CUPTI_SUCCESS)
                name = "?";
            fprintf(out, "R,%llu,%llu,%u,%u,0,%s\n", (unsigned long long)a->start,
                    (unsigned long long)a->end, (unsigned)a->threadId, a->correlationId, name);
        }
    }
    free(buf);
}

static void finish(void) {
    cuptiActivityFlushAll(1);
    if (out) fclose(out);
    out = NULL;
}

int InitializeInjection(void) {
    const char *path = getenv("CUPTI_TRACE_OUT"), *api = getenv("CUPTI_TRACE_API");
    if (!(out = fopen(path ? path : "cupti-trace.csv", "w"))) return 0;
    if (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS ||
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY) != CUPTI_SUCCESS ||
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET) != CUPTI_SUCCESS ||
        (api && *api == '1' &&
         cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) != CUPTI_SUCCESS) ||
        cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS) {
        fprintf(stderr, "cupti-trace: CUPTI refused the activity trace\n");
        fclose(out);
        out = NULL;
        return 0;
    }
    atexit(finish);
    return 1;
}
