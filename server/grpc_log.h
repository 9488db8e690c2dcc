/* grpc_log.h — gRPC's own log lines through featstore's log.
 *
 * gRPC's C core writes its lines to stderr in a format of its own
 * ("E1129 10:31:02.120 4211 ssl_transport_security.cc:1472] Handshake
 * failed ..."). The server hands them to featstore's log instead, one line
 * each, formatted like its own: "featstore: error: grpc: Handshake failed
 * ...", "featstore: grpc: ..." for gRPC's INFO and DEBUG lines. Which lines
 * gRPC produces is still GRPC_VERBOSITY's choice (default ERROR), and
 * GRPC_TRACE's. A client can make gRPC log a line per connection (a
 * plaintext client on a TLS port: a failed handshake each time), so at most
 * FS_GRPC_LOG_PER_S lines a second are written; the lines left out are
 * counted in the next one written. */
#ifndef FS_GRPC_LOG_H
#define FS_GRPC_LOG_H

#define FS_GRPC_LOG_PER_S 20

/* Installs the hook (gpr_set_log_function); once per process, any thread. */
void fs_grpc_log_to_featstore(void);

#endif
