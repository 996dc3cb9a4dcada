/* An AVX2-only CPU on an AVX-512 one, for measuring (scripts/avx2-only builds and preloads this).
 *
 * Every library here picks its kernels from the CPUID instruction: onnxruntime's MLAS, torch's oneDNN,
 * numpy. With CPUID faulting (arch_prctl ARCH_SET_CPUID, 0; Linux 4.12+, "cpuid_fault" in
 * /proc/cpuinfo) every CPUID in the process raises SIGSEGV; the handler below runs the real instruction
 * and clears what an AMD Zen 3 (AVX2 and FMA) does not have: AVX-512, VNNI in both encodings, AMX,
 * and the AVX-512 register state in leaf 0xD. The code that then runs is the code an AVX2 machine runs,
 * at this machine's clock.
 *
 * Only Python processes are masked (the project's own: emulator, replicas, agent, workers). Others
 * that inherit LD_PRELOAD (a browser, a container engine, an encoder) run unchanged: a sandbox may
 * forbid the arch_prctl the handler needs.
 *
 * The process's own SIGSEGV handlers (Python's faulthandler, which pytest turns on) are kept behind
 * this one: sigaction() is interposed, so theirs is called for every SIGSEGV that is not a CPUID. */
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <cpuid.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

static sigaction_fn real_sigaction;
static int masking;
static struct sigaction chained; /* what the process set for SIGSEGV, called for every other fault */

static long cpuid_faults(int on) { return syscall(SYS_arch_prctl, ARCH_SET_CPUID, on ? 0 : 1); }

static void masked_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
    cpuid_faults(0);
    __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
    cpuid_faults(1);
    if (leaf == 7 && sub == 0) {
        /* EBX: AVX512F, DQ, IFMA, PF, ER, CD, BW, VL */
        r[1] &= ~((1u << 16) | (1u << 17) | (1u << 21) | (1u << 26) | (1u << 27) | (1u << 28) |
                  (1u << 30) | (1u << 31));
        /* ECX: AVX512_VBMI, VBMI2, VNNI, BITALG, VPOPCNTDQ */
        r[2] &= ~((1u << 1) | (1u << 6) | (1u << 11) | (1u << 12) | (1u << 14));
        /* EDX: AVX512_4VNNIW, 4FMAPS, VP2INTERSECT, AMX_BF16, AVX512_FP16, AMX_TILE, AMX_INT8 */
        r[3] &= ~((1u << 2) | (1u << 3) | (1u << 8) | (1u << 22) | (1u << 23) | (1u << 24) |
                  (1u << 25));
    } else if (leaf == 7 && sub == 1) {
        r[0] &= ~((1u << 4) | (1u << 5) | (1u << 23)); /* AVX_VNNI, AVX512_BF16, AVX_IFMA */
        r[3] &= ~((1u << 4) | (1u << 5));              /* AVX_VNNI_INT8, AVX_NE_CONVERT */
    } else if (leaf == 0xd && sub == 0) {
        r[0] &= ~(0x7u << 5); /* opmask, ZMM_Hi256, Hi16_ZMM state */
    }
}

static void on_segv(int sig, siginfo_t *info, void *context) {
    greg_t *reg = ((ucontext_t *)context)->uc_mcontext.gregs;
    const unsigned char *ip = (const unsigned char *)reg[REG_RIP];
    if (info->si_code > 0 && ip[0] == 0x0f && ip[1] == 0xa2) {
        uint32_t r[4];
        masked_cpuid((uint32_t)reg[REG_RAX], (uint32_t)reg[REG_RCX], r);
        reg[REG_RAX] = r[0];
        reg[REG_RBX] = r[1];
        reg[REG_RCX] = r[2];
        reg[REG_RDX] = r[3];
        reg[REG_RIP] += 2;
        return;
    }
    if (chained.sa_flags & SA_SIGINFO) {
        chained.sa_sigaction(sig, info, context);
    } else if (chained.sa_handler != SIG_DFL && chained.sa_handler != SIG_IGN) {
        chained.sa_handler(sig);
    } else {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        real_sigaction(SIGSEGV, &dfl, NULL);
        raise(sig);
    }
}

int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    if (!real_sigaction) real_sigaction = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
    if (sig != SIGSEGV || !masking) return real_sigaction(sig, act, old);
    if (old) *old = chained;
    if (act) chained = *act;
    return 0;
}

static int is_python(void) {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return 0;
    exe[n] = 0;
    const char *base = strrchr(exe, '/');
    return strncmp(base ? base + 1 : exe, "python", 6) == 0;
}

__attribute__((constructor)) static void hide_avx512(void) {
    real_sigaction = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
    if (!is_python()) return;
    struct sigaction ours;
    memset(&ours, 0, sizeof ours);
    ours.sa_sigaction = on_segv;
    ours.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&ours.sa_mask);
    if (real_sigaction(SIGSEGV, &ours, &chained) != 0) return;
    if (cpuid_faults(1) != 0) {
        real_sigaction(SIGSEGV, &chained, NULL);
        return;
    }
    masking = 1;
}
