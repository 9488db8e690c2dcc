/* test_util.c — see test_util.h. */
#include "test_util.h"

#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include <ftw.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "import.h"
#include "writer.h"

char *tu_mkdtemp(void)
{
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char *p = malloc(strlen(base) + 32);
    sprintf(p, "%s/fs-test-XXXXXX", base);
    cr_assert_not_null(mkdtemp(p), "mkdtemp failed");
    return p;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

void tu_rm_rf(const char *path)
{
    nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

char *tu_path(const char *dir, const char *name)
{
    char *p = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

void tu_write(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write %s", path);
    cr_assert_eq(fwrite(data, 1, len, f), len);
    fclose(f);
}

void *tu_read(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot read %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    if (len) *len = (size_t)n;
    return buf;
}

int tu_files_equal(const char *a, const char *b)
{
    size_t la, lb;
    char *x = tu_read(a, &la), *y = tu_read(b, &lb);
    int eq = la == lb && memcmp(x, y, la) == 0;
    free(x);
    free(y);
    return eq;
}

int tu_run(char **out, const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    char full[8300];
    snprintf(full, sizeof full, "( %s ) 2>&1", cmd);
    FILE *p = popen(full, "r");
    cr_assert_not_null(p);
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    size_t r;
    while ((r = fread(buf + len, 1, cap - len - 1, p)) > 0) {
        len += r;
        if (cap - len < 2) buf = realloc(buf, cap *= 2);
    }
    buf[len] = '\0';
    int st = pclose(p);
    if (out) *out = buf;
    else free(buf);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

fs_dataset_t *tu_open_dataset(const char *dir)
{
    fs_dataset_t *ds;
    fs_error_t err = {0};
    cr_assert_eq(fs_dataset_open(dir, 0, 1, &ds, &err), FS_OK, "%s", err.msg);
    return ds;
}

fs_dataset_t *tu_import_cora(const char *dir)
{
    char *out = tu_path(dir, "cora");
    fs_import_opts_t o = {.out_dir = out, .threads = 1, .edges = {.symmetrize = 1, .dedup = 1}};
    fs_error_t err = {0};
    cr_assert_eq(fs_import_npz(tu_data("cora.npz"), &o, &err), FS_OK, "%s", err.msg);
    fs_dataset_t *ds = tu_open_dataset(out);
    free(out);
    return ds;
}

fs_dataset_t *tu_gen_rmat(const char *dir, const char *name, fs_rmat_opts_t *g)
{
    char *out = tu_path(dir, name);
    fs_error_t err = {0};
    g->out_dir = out;
    cr_assert_eq(fs_gen_rmat(g, &err), FS_OK, "%s", err.msg);
    fs_dataset_t *ds = tu_open_dataset(out);
    g->out_dir = NULL;
    free(out);
    return ds;
}

pid_t tu_spawn(FILE **out, const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    cr_assert(n > 0 && (size_t)n < sizeof cmd - 8, "command too long");
    int p[2];
    cr_assert_eq(pipe(p), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives the test */
        dup2(p[1], 1);
        close(p[0]);
        char full[8200];
        snprintf(full, sizeof full, "exec %s", cmd);
        execl("/bin/sh", "sh", "-c", full, (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    *out = fdopen(p[0], "r");
    return pid;
}

/* Where the build put them, unless the environment says otherwise: a GPU
 * bundle (scripts/gpu-bundle.sh) runs the tests away from the build tree. */
static const char *from_env(const char *var, const char *built)
{
    const char *v = getenv(var);
    return v && *v ? v : built;
}

const char *tu_data(const char *name)
{
    static char buf[4][4096];
    static int slot;
    char *p = buf[slot++ & 3];
    snprintf(p, 4096, "%s/%s", from_env("FEATSTORE_TEST_DATA", FS_TEST_DATA_DIR), name);
    return p;
}

const char *tu_bin(void) { return from_env("FEATSTORE_TEST_BIN", FS_BIN); }

int tu_have_numpy(void)
{
    return tu_run(NULL, "/usr/bin/python3 -c 'import numpy'") == 0;
}

void tu_make_dataset(const char *dir, int64_t n, const int64_t *indptr, const int32_t *indices, int64_t dim)
{
    fs_writer_t *w;
    fs_error_t err = {0};
    cr_assert_eq(fs_writer_create(dir, 1, &w, &err), FS_OK, "%s", err.msg);
    int64_t *ip, shape[2] = {n + 1, dim};
    int32_t *ix;
    cr_assert_eq(fs_writer_array(w, FS_ROLE_INDPTR, NULL, FS_DTYPE_I64, 1, shape, (void **)&ip, &err), FS_OK);
    memcpy(ip, indptr, (size_t)(n + 1) * sizeof *ip);
    shape[0] = indptr[n];
    cr_assert_eq(fs_writer_array(w, FS_ROLE_INDICES, NULL, FS_DTYPE_I32, 1, shape, (void **)&ix, &err), FS_OK);
    memcpy(ix, indices, (size_t)indptr[n] * sizeof *ix);
    if (dim > 0) {
        float *t;
        shape[0] = n;
        cr_assert_eq(fs_writer_array(w, FS_ROLE_FEATURES, "feat", FS_DTYPE_F32, 2, shape, (void **)&t, &err), FS_OK);
        for (int64_t v = 0; v < n; v++)
            for (int64_t j = 0; j < dim; j++) t[v * dim + j] = (float)(v * 1000 + j);
    }
    fs_writer_set_meta(w, "tiny", n, indptr[n], 0, 0);
    cr_assert_eq(fs_writer_commit(w, &err), FS_OK, "%s", err.msg);
}

void tu_strip_checksums(const char *dir)
{
    char *path = tu_path(dir, "manifest.json");
    json_error_t jerr;
    json_t *m = json_load_file(path, 0, &jerr);
    cr_assert_not_null(m);
    json_object_del(m, "files");
    cr_assert_eq(json_dump_file(m, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER), 0);
    json_decref(m);
    free(path);
}

/* A minimal HTTP/1.0 GET; returns the whole response (headers + body). */
char *tu_http_get(int port, const char *path)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    char req[256];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n", path);
    cr_assert_eq(write(fd, req, (size_t)n), n);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    ssize_t r;
    while ((r = read(fd, buf + len, cap - len - 1)) > 0)
        if ((len += (size_t)r) + 1 == cap) buf = realloc(buf, cap *= 2);
    buf[len] = '\0';
    close(fd);
    return buf;
}

/* Metrics once `want` appears in them (polled: reports arrive asynchronously). */
char *tu_metrics_with(int port, const char *want)
{
    char *m = NULL;
    for (int i = 0; i < 200; i++) {
        free(m);
        m = tu_http_get(port, "/metrics");
        if (strstr(m, want)) return m;
        usleep(20000);
    }
    cr_assert_fail("no \"%s\" in %s", want, m);
    return m;
}

int tu_serve(tu_server_t *s, const char *data, const char *sock, const char *extra)
{
    s->pid = tu_spawn(&s->out, "%s serve %s --socket %s --listen 127.0.0.1:0 --metrics 127.0.0.1:0 %s", tu_bin(), data,
                      sock, extra);
    char line[512];
    if (!fgets(line, sizeof line, s->out)) return -1; /* exited before READY */
    cr_assert(sscanf(line, "READY unix=%*s grpc=%*[^:]:%d metrics=%d", &s->grpc_port, &s->metrics_port) == 2,
              "bad READY line: %s", line);
    return 0;
}

int tu_serve_stop(tu_server_t *s, int sig)
{
    kill(s->pid, sig);
    int st;
    waitpid(s->pid, &st, 0);
    fclose(s->out);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int tu_grpc_call(int port, const char *method, const void *payload, size_t len, char *details, size_t details_size,
                 int *got_message)
{
    grpc_init();
    char target[64];
    snprintf(target, sizeof target, "127.0.0.1:%d", port);
    grpc_channel_credentials *creds = grpc_insecure_credentials_create();
    grpc_channel *ch = grpc_channel_create(target, creds, NULL);
    grpc_channel_credentials_release(creds);
    grpc_completion_queue *cq = grpc_completion_queue_create_for_next(NULL);
    gpr_timespec deadline = gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_seconds(30, GPR_TIMESPAN));
    grpc_call *call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq,
                                               grpc_slice_from_static_string(method), NULL, deadline, NULL);
    grpc_slice s = grpc_slice_from_copied_buffer(payload, len);
    grpc_byte_buffer *send = grpc_raw_byte_buffer_create(&s, 1), *recv = NULL;
    grpc_slice_unref(s);
    grpc_metadata_array md0, md1;
    grpc_metadata_array_init(&md0);
    grpc_metadata_array_init(&md1);
    grpc_status_code code = GRPC_STATUS_UNKNOWN;
    grpc_slice det = grpc_empty_slice();
    grpc_op ops[6];
    memset(ops, 0, sizeof ops);
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = send;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &md0;
    ops[4].op = GRPC_OP_RECV_MESSAGE;
    ops[4].data.recv_message.recv_message = &recv;
    ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[5].data.recv_status_on_client.trailing_metadata = &md1;
    ops[5].data.recv_status_on_client.status = &code;
    ops[5].data.recv_status_on_client.status_details = &det;
    cr_assert_eq(grpc_call_start_batch(call, ops, 6, (void *)1, NULL), GRPC_CALL_OK);
    grpc_event ev = grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    cr_assert_eq(ev.type, GRPC_OP_COMPLETE);
    char *d = grpc_slice_to_c_string(det);
    snprintf(details, details_size, "%s", d);
    gpr_free(d);
    grpc_slice_unref(det);
    if (got_message) *got_message = recv != NULL;
    if (recv) grpc_byte_buffer_destroy(recv);
    grpc_byte_buffer_destroy(send);
    grpc_metadata_array_destroy(&md0);
    grpc_metadata_array_destroy(&md1);
    grpc_call_unref(call);
    grpc_channel_destroy(ch);
    grpc_completion_queue_shutdown(cq);
    while (grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type != GRPC_QUEUE_SHUTDOWN) {
    }
    grpc_completion_queue_destroy(cq);
    grpc_shutdown();
    return code;
}

char *tu_doc_block(const char *doc, const char *marker, const char *lang)
{
    char path[600], fence[32];
    snprintf(path, sizeof path, "%s/../../docs/%s", FS_TEST_DATA_DIR, doc);
    snprintf(fence, sizeof fence, "```%s\n", lang);
    char *text = tu_read(path, NULL), *at = strstr(text, marker), *start = at ? strstr(at, fence) : NULL;
    char *end = start ? strstr(start + strlen(fence), "```") : NULL;
    cr_assert(end, "no ```%s block after \"%s\" in %s", lang, marker, path);
    start += strlen(fence);
    char *block = strndup(start, (size_t)(end - start));
    free(text);
    return block;
}
