/* progress.c — see progress.h. Output goes to stderr so that stdout stays
 * machine-readable for the commands that print results there. */
#include "progress.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void fs_progress_start(fs_progress_t *p, const char *label)
{
    snprintf(p->label, sizeof p->label, "%s", label);
    p->tty = isatty(STDERR_FILENO);
    p->t0 = p->last = fs_now();
}

static void human(double v, char *buf, size_t n)
{
    if (v >= 1e9) snprintf(buf, n, "%.2fG", v / 1e9);
    else if (v >= 1e6) snprintf(buf, n, "%.2fM", v / 1e6);
    else if (v >= 1e3) snprintf(buf, n, "%.1fk", v / 1e3);
    else snprintf(buf, n, "%.0f", v);
}

void fs_progress_update(fs_progress_t *p, double fraction, int64_t count, const char *unit)
{
    if (!p->tty) return;
    double now = fs_now();
    if (now - p->last < 0.1) return;
    p->last = now;
    char c[32], r[32];
    human((double)count, c, sizeof c);
    human((double)count / (now - p->t0 + 1e-9), r, sizeof r);
    if (fraction >= 0)
        fprintf(stderr, "\r%s: %5.1f%%  %s %s  (%s/s)   ", p->label, 100 * fraction, c, unit, r);
    else
        fprintf(stderr, "\r%s: %s %s  (%s/s)   ", p->label, c, unit, r);
    fflush(stderr);
}

void fs_progress_done(fs_progress_t *p, int64_t count, const char *unit)
{
    double dt = fs_now() - p->t0;
    char c[32];
    human((double)count, c, sizeof c);
    fprintf(stderr, "%s%s: %s %s in %.2f s\n", p->tty ? "\r" : "", p->label, c, unit, dt);
}
