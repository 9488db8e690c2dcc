/* shard.c — a shard server's parts, opened from its partition root, and
 * the partitioning's small files it lets trainers read (shard.h). */
#include "shard.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_fileio.h"
#include "partition.h"

fs_status_t fs_shard_open_parts(const char *root, const int *parts, int n, int threads, fs_dataset_t **ds,
                                fs_error_t *err)
{
    fs_status_t st = FS_OK;
    for (int i = 0; i < n; i++) ds[i] = NULL;
    for (int i = 0; st == FS_OK && i < n; i++) {
        char dir[PATH_MAX];
        fs_partition_part_dir(root, parts[i], dir, sizeof dir);
        for (int j = 0; j < i && st == FS_OK; j++)
            if (parts[j] == parts[i]) st = fs_error(err, FS_ERR_INVALID_ARGUMENT, "shard: part %d is listed twice", parts[i]);
        if (st == FS_OK && (st = fs_dataset_open(dir, 0, threads, &ds[i], err)) == FS_OK && ds[i]->partition.parts &&
            ds[i]->partition.index != parts[i])
            st = fs_error(err, FS_ERR_FORMAT, "shard: %s says it is part %d, not %d", dir, ds[i]->partition.index,
                          parts[i]);
    }
    for (int i = 0; st != FS_OK && i < n; i++) fs_dataset_close(ds[i]), ds[i] = NULL;
    return st;
}

fs_status_t fs_shard_open(const char *root, const int *parts, int n, int threads, fs_shard_t **out, fs_error_t *err)
{
    *out = NULL;
    char id[FS_PARTITION_ID_LEN + 1];
    int V = 0;
    fs_status_t st = fs_partition_identity(root, id, &V, err);
    if (st != FS_OK) return st;
    if (n <= 0) return fs_shard_empty(root, id, V, out, err); /* a shard waiting for parts (serve --parts assigned) */
    for (int i = 0; i < n; i++)
        if (parts[i] < 0 || parts[i] >= V)
            return fs_error(err, FS_ERR_INVALID_ARGUMENT, "shard: part %d of a partitioning of %d parts", parts[i], V);
    fs_dataset_t **ds = calloc((size_t)n, sizeof *ds);
    if (!ds) return fs_error(err, FS_ERR_NOMEM, "shard: out of memory");
    st = fs_shard_open_parts(root, parts, n, threads, ds, err);
    if (st == FS_OK) st = fs_shard_adopt(root, ds, n, out, err); /* it takes the parts */
    if (st == FS_OK && strcmp(fs_shard_partitioning(*out), id) != 0) {
        st = fs_error(err, FS_ERR_FORMAT, "shard: the parts in %s are of partitioning %s, its book's is %s", root,
                      fs_shard_partitioning(*out), id);
        fs_shard_close(*out);
        *out = NULL;
    }
    free(ds);
    return st;
}

fs_status_t fs_shard_root_parts(const char *root, int *parts, fs_error_t *err)
{
    return fs_partition_num_parts(root, parts, err);
}

/* ---- the partitioning's small files ------------------------------------------------ */

/* Whether name is one a trainer may read (fs_shard_file): only the
 * characters of names the partitioner writes, no "..", one '/' at most,
 * and under a part only a held part's manifest. */
static int file_allowed(const fs_shard_t *s, const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || len > 200 || name[0] == '.' || strstr(name, "..")) return 0;
    for (const char *c = name; *c; c++)
        if (!(*c == '_' || *c == '-' || *c == '.' || *c == '/' || (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') ||
              (*c >= 'A' && *c <= 'Z')))
            return 0;
    const char *slash = strchr(name, '/');
    if (!slash) {
        size_t n = strlen(name);
        return strcmp(name, FS_PARTITION_BOOK) == 0 || (n > 13 && strcmp(name + n - 13, ".node_map.npy") == 0) ||
               (n > 8 && strcmp(name + n - 8, ".hot.npy") == 0) ||
               (n > 14 && strcmp(name + n - 14, ".in_degree.npy") == 0) ||
               (n > 15 && strcmp(name + n - 15, ".out_degree.npy") == 0) ||
               (strncmp(name, "link.", 5) == 0 && n > 4 && strcmp(name + n - 4, ".npy") == 0) ||
               (strstr(name, ".split_") && n > 4 && strcmp(name + n - 4, ".npy") == 0);
    }
    int part;
    char rest[32];
    if (sscanf(name, "part-%5d/%31s", &part, rest) != 2 || strcmp(rest, "manifest.json") != 0) return 0;
    char expect[64];
    snprintf(expect, sizeof expect, "part-%05d/manifest.json", part);
    return strcmp(expect, name) == 0 && fs_shard_part(s, part) != NULL;
}

fs_status_t fs_shard_file(const fs_shard_t *s, const char *name, int64_t offset, int64_t max, void *buf, int64_t *len,
                          int64_t *size, fs_error_t *err)
{
    if (!file_allowed(s, name))
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "shard: '%s' is not a file of the partitioning a trainer may "
                        "read (partition.json, TYPE.node_map.npy, TYPE.hot.npy, TYPE.split_NAME.npy, "
                        "link.NAME.ARRAY.npy, edges_E.in_degree.npy, edges_E.out_degree.npy, or a held part's "
                        "part-NNNNN/manifest.json)", name);
    if (offset < 0 || max <= 0)
        return fs_error(err, FS_ERR_INVALID_ARGUMENT, "shard: %s: offset %lld and length %lld", name,
                        (long long)offset, (long long)max);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", fs_shard_name(s), name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        int e = errno;
        if (fd >= 0) close(fd);
        return fs_error(err, e == ENOENT ? FS_ERR_NOT_FOUND : FS_ERR_IO, "shard: %s: %s", name, strerror(e));
    }
    *size = sb.st_size;
    int64_t want = offset >= sb.st_size ? 0 : sb.st_size - offset < max ? sb.st_size - offset : max;
    ssize_t done = fs_pread_full(fd, buf, (size_t)want, (uint64_t)offset);
    if (done < want) { /* an error, or the file shrank since fstat */
        int e = done < 0 ? errno : EIO;
        close(fd);
        return fs_error(err, FS_ERR_IO, "shard: %s: cannot read: %s", name, strerror(e));
    }
    close(fd);
    *len = done;
    return FS_OK;
}
