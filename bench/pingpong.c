/* The cost of handing one cache line back and forth between CPU 0 and CPU 1, every
 * half second for SECONDS seconds (default 20): a probe of this machine's state, not an
 * MPI benchmark. On the development VM it alternates between about 55 ns and about
 * 330 ns per round trip in phases of several seconds (BENCHMARKS.md, "Why five
 * rounds"); a collective benchmark run in a slow phase moves data between the ranks
 * several times slower.
 *
 * Build: cc -O2 -pthread -Wall -Wextra -Werror -o pingpong bench/pingpong.c
 * Run:   ./pingpong [SECONDS [INTERVAL]]   (prints "<time> s: <ns> ns/round trip" lines,
 *        one per INTERVAL seconds, default 0.5; `make bench` runs `pingpong 0.1 0.1`
 *        before and after every collective run to learn the phase it ran in) */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static _Alignas(64) atomic_long ball;
static atomic_int stop;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    if (pthread_setaffinity_np(pthread_self(), sizeof s, &s) != 0) {
        fprintf(stderr, "pingpong: cannot pin to CPU %d\n", cpu);
        exit(1);
    }
}

/* CPU 1: answers every odd value with the next even one. */
static void *answer(void *arg) {
    (void)arg;
    pin(1);
    long v = 1;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        if (atomic_load_explicit(&ball, memory_order_acquire) == v) {
            atomic_store_explicit(&ball, v + 1, memory_order_release);
            v += 2;
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 20.0;
    double every = argc > 2 ? atof(argv[2]) : 0.5;
    if (!(every > 0.0)) every = 0.5;
    pin(0);
    pthread_t t;
    if (pthread_create(&t, NULL, answer, NULL) != 0) return 1;
    long v = 0;
    double t0 = now();
    while (now() - t0 < secs) {
        double s = now();
        long trips = 0;
        while (now() - s < every) {
            for (int i = 0; i < 1000; i++) {
                atomic_store_explicit(&ball, v + 1, memory_order_release);
                v += 2;
                while (atomic_load_explicit(&ball, memory_order_acquire) != v) {
                }
            }
            trips += 1000;
        }
        printf("%5.1f s: %.0f ns/round trip\n", now() - t0, (now() - s) / (double)trips * 1e9);
        fflush(stdout);
    }
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    return 0;
}
