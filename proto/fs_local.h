/* fs_local.h — the local transport's wire format (unix:// clients): frames
 * on an AF_UNIX SOCK_SEQPACKET socket, descriptors passed beside them with
 * SCM_RIGHTS, and control messages in protobuf (featstore_local.proto), so
 * either side may add fields without breaking the other.
 *
 * A frame is a 16-byte header {magic "FSL1", major version, type, payload
 * length} and one payload: an encoded featstore.local message, or for
 * STATS_REPLY the Prometheus text. The conversation:
 *
 *   client -> HELLO (Hello: versions, slots, pid, reader)
 *   server -> WELCOME (Welcome: dataset, limits, the reader's placement,
 *             the negotiated version) + its descriptors, continued in FDS
 *             frames when there are more than one frame may carry
 *   client -> INFO | STATS           server -> INFO_REPLY (featstore.v1.
 *             InfoResponse, featstore.proto) | STATS_REPLY (text)
 *   client -> SPLIT (SplitRequest)   server -> SPLIT_REPLY (SplitReply) + a
 *             read-only descriptor of the split's file
 *   client -> REPORT (Report) after each call it ran in-process; no reply
 *   client -> RELAYOUT               server -> WELCOME for the placement
 *             served now, without slots
 *   client -> REPLAN (ReplanRequest) server -> REPLAN_REPLY (ReplanReply)
 *   server -> ERROR (Error) instead of any reply
 *
 * Versions: major.minor. The header carries the major; peers of different
 * majors do not talk (the older side must be upgraded), and a server
 * answers clients of the raw-struct protocol (majors 1-5, featstore 0.1)
 * with an error in their own format, so they can say what to upgrade. The
 * minor is negotiated: HELLO says the client's, WELCOME the one both speak
 * (the lower); peers one minor apart interoperate, a wider gap is an error
 * naming both versions and the side to upgrade.
 *   6.0  protobuf control messages (this file's first version)
 *   6.1  Hello.library_version: the server counts its local clients by
 *        protocol and library version in /metrics
 *   6.2  device tiers: Tier.bytes and Tier.ipc_handle, Slice.offset and
 *        TopoPart offsets. A trainer reading GPU tiers opens each tier's
 *        one allocation by its CUDA IPC handle; a 6.1 client reading as a
 *        GPU whose placement has device tiers is refused with the reason
 *        (it would expect a descriptor per slice)
 *   6.3  typed graphs: Welcome.manifest_bytes, files and typed. The trainer
 *        opens the dataset from the manifest and the files' descriptors
 *        (sent after the slots) and runs typed sampling in-process; a
 *        typed dataset has no version-1 arrays. A 6.2 client connecting
 *        to a typed dataset is refused with the reason
 *   6.4  a shard server's socket: SHARD_HELLO (ShardHello), answered by a
 *        SHARD_PART frame (ShardPart) per part the shard holds, each with
 *        the part's manifest and files, so a trainer on the shard's
 *        machine runs the shard's engine on them (client-lib/
 *        client_cluster_local.c). A whole server refuses SHARD_HELLO, a
 *        shard's socket every other message, each naming the other
 *   6.5  compressed tables: Table.codec. A 6.4 client of a dataset with
 *        one is refused with the reason (it would serve the stored codes
 *        where float32 is asked for)
 *
 * Re-planning: the placement has a generation (1 at start, +1 per re-plan),
 * in WELCOME and in the notice page, a read-only shared page whose first 8
 * bytes the server sets to the current generation. A client checks it (one
 * load) before each call and asks RELAYOUT when it has moved on, so trainers
 * follow a new plan without reconnecting.
 *
 * Thread-safety: the functions keep no state; one sender and one receiver
 * per socket at a time. */
#ifndef FS_LOCAL_H
#define FS_LOCAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "featstore_local.pb.h"
#include "fs_types.h"

#define FS_LOCAL_MAGIC 0x314c5346u /* "FSL1" */
#define FS_LOCAL_MAJOR 6
#define FS_LOCAL_MINOR 5
#define FS_LOCAL_MAX_SLOTS 64
#define FS_LOCAL_MAX_FDS 250 /* per frame, under the kernel's SCM_RIGHTS limit of 253 */
#define FS_LOCAL_MAX_MSG (256 * 1024)
#define FS_LOCAL_NOTICE_BYTES 4096
/* The notice page's value once the server has stopped: every connected
 * client's next call fails FS_ERR_UNAVAILABLE (its own engines would
 * otherwise go on serving from the old mappings, unseen by a restarted
 * server), so trainers reconnect. Older clients take it for a newer
 * placement, ask for it and find the socket closed: the same error. */
#define FS_LOCAL_NOTICE_STOPPED UINT64_MAX

enum {
    FS_LOCAL_HELLO = 1,
    FS_LOCAL_WELCOME,
    FS_LOCAL_INFO,
    FS_LOCAL_INFO_REPLY,
    FS_LOCAL_STATS,
    FS_LOCAL_STATS_REPLY,
    FS_LOCAL_REPORT,
    FS_LOCAL_ERROR,
    FS_LOCAL_SPLIT,
    FS_LOCAL_SPLIT_REPLY,
    FS_LOCAL_RELAYOUT,
    FS_LOCAL_REPLAN,
    FS_LOCAL_REPLAN_REPLY,
    FS_LOCAL_FDS,          /* more of the previous WELCOME's descriptors; empty payload */
    FS_LOCAL_SHARD_HELLO,  /* 6.4: to a shard server's socket */
    FS_LOCAL_SHARD_PART,   /* 6.4: one part the shard holds, with its descriptors */
};

typedef struct {
    uint32_t magic;
    uint16_t version;   /* the major version */
    uint16_t type;
    uint32_t len;       /* payload bytes after the header */
    uint32_t reserved;
} fs_local_hdr_t;

/* A received frame's header facts. */
typedef struct {
    int type;
    unsigned major;     /* the sender's major version */
    size_t len;         /* payload bytes */
} fs_local_frame_t;

/* Sends one frame of our major version with optional descriptors (at most
 * FS_LOCAL_MAX_FDS). 0, or -1 with errno set. flags: MSG_DONTWAIT to never
 * block. */
int fs_local_send(int sock, int type, const void *payload, size_t len, const int *fds, int nfds, int flags);

/* Encodes msg (a featstore.local or featstore.v1 message) and sends it as
 * one frame. 0, or -1 with errno (EMSGSIZE when it does not fit a frame). */
int fs_local_send_msg(int sock, int type, const pb_msgdesc_t *fields, const void *msg, const int *fds, int nfds,
                      int flags);

/* Sends an ERROR frame (message cut to the field's size). */
int fs_local_send_error(int sock, fs_status_t status, const char *message, int flags);

/* Receives one frame into buf (cap bytes for the payload). Returns 1 for a
 * frame, 0 when the peer closed (also when it closed with our frames
 * unread, which resets the socket: a frame it left first, such as the
 * ERROR saying why, is still returned before that), -1 on error: errno
 * EPROTO for a malformed
 * frame, EMSGSIZE for one longer than cap (cut off: the kernel queues whole
 * frames), EPROTONOSUPPORT for a well-formed frame of another major version
 * (f->major and f->type say which, the payload is in buf). Received
 * descriptors go to fds[*nfds]; any beyond max_fds are closed, and so are
 * all of them on an error. */
int fs_local_recv(int sock, fs_local_frame_t *f, void *buf, size_t cap, int *fds, int *nfds, int max_fds, int flags);

/* Decodes a frame's payload; FS_ERR_FORMAT naming `what` otherwise. */
fs_status_t fs_local_decode(const void *buf, size_t len, const pb_msgdesc_t *fields, void *msg, const char *what,
                            fs_error_t *err);

/* The minor version two peers speak: ours against theirs (same major),
 * or FS_ERR_VERSION naming both versions and which side to upgrade.
 * we_serve: we are the server (the wording of the advice). */
fs_status_t fs_local_negotiate(unsigned our_minor, unsigned their_major, unsigned their_minor, int we_serve,
                               unsigned *minor, fs_error_t *err);

/* The raw-struct protocol of majors 1-5 (featstore 0.1): its ERROR frame
 * payload, which those clients print. The server sends it, under the
 * client's own major, to say that the client must be upgraded. */
#define FS_LOCAL_LEGACY_ERROR_BYTES 504
int fs_local_send_legacy_error(int sock, unsigned their_major, fs_status_t status, const char *message);

/* A growable array of descriptors, as they travel beside frames (the
 * server's list to send, the client's list received). `next` is a reader's
 * cursor; the list never closes what it holds: its user owns them. */
typedef struct {
    int *fd;
    size_t n, cap, next;
} fs_fd_list_t;

/* Appends fd; 0, or -1 when out of memory (fd is then not in the list). */
int fs_fd_list_push(fs_fd_list_t *l, int fd);

#endif
