/* Host clock (CLOCK_MONOTONIC) in microseconds. */
#ifndef GR_TIMER_H
#define GR_TIMER_H

#include <time.h>

static inline double gr_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

#endif
