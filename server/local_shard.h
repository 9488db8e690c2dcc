/* local_shard.h — a shard server's unix:// socket (`featstore serve ROOT
 * --parts ... --socket PATH`): a trainer on the shard's machine asks it
 * for the shard's parts and gets each part's manifest and the descriptors
 * of its files (proto/fs_local.h, 6.4: SHARD_HELLO, SHARD_PART), so it
 * runs the shard's engine (exec/fs_shard.h) in its own process on the very
 * pages the shard maps: no copy, no gRPC, for the share of a batch this
 * machine holds.
 *
 * One exchange per connection, then the shard hangs up: the descriptors
 * stay valid in the trainer, and a part's files never change under a
 * shard (a partitioning is written once). Each handshake runs on a thread
 * of its own, within FS_LOCAL_SHARD_HANDSHAKE_MS, up to
 * FS_LOCAL_SHARD_MAX_HANDSHAKES at once (more are refused, saying so);
 * peers are admitted by the server's allow-list (local_socket.h).
 *
 * Thread-safety: start and stop from one thread; the socket's threads only
 * read the shards. */
#ifndef FS_LOCAL_SHARD_H
#define FS_LOCAL_SHARD_H

#include "local_socket.h"
#include "shard_live.h"

/* How long a peer has to send its SHARD_HELLO, and the shard to send its parts. */
#define FS_LOCAL_SHARD_HANDSHAKE_MS 5000
#define FS_LOCAL_SHARD_MAX_HANDSHAKES 32

typedef struct fs_local_shard fs_local_shard_t;

/* Listens on path and serves the parts `live` holds at each handshake
 * (borrowed: it must outlive the socket) as shard number id, admitting the
 * peers `allow` admits (copied). */
fs_status_t fs_local_shard_start(const char *path, fs_shard_live_t *live, int id, const fs_local_allow_t *allow,
                                 fs_local_shard_t **out, fs_error_t *err);
/* Stops the thread, removes the socket file (if still its own) and frees
 * everything. NULL is a no-op. */
void fs_local_shard_stop(fs_local_shard_t *ls);

#endif
