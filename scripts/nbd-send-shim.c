/* An LD_PRELOAD shim for the NBD stage's TLS cost decomposition (scripts/nbd-stage.sh):
 * it changes only how an NBD client's request bytes are cut into TCP segments, so that
 * the cost of the cut can be told apart from the cost of TLS itself.
 *
 * libnbd sends a WRITE's 28-byte header and its payload in two send calls. In plaintext
 * it passes MSG_MORE with the header, so both leave in one TCP segment; over TLS
 * (libnbd's tls_send ignores the flag) they become two TLS records in two segments, and
 * each segment costs the sending CPU a loopback transmit and receive.
 *
 *   SHIM_MODE=split  plaintext as TLS does it: MSG_MORE stripped from send/sendto, so
 *                    the header leaves in a segment of its own.
 *   SHIM_MODE=cork   TLS as plaintext does it: MSG_MORE added to a sendmsg of 40-64
 *                    bytes (one TLS record of a request header), so a WRITE's header
 *                    record leaves with its payload record. For write-only jobs: a READ
 *                    request's lone header record would be held until the kernel's cork
 *                    timer.
 *
 * Build: cc -O2 -shared -fPIC -o nbd-send-shim.so nbd-send-shim.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

enum { NONE, SPLIT, CORK };

static int mode(void) {
  static int m = -1;
  if (m < 0) {
    const char *e = getenv("SHIM_MODE");
    m = !e ? NONE : !strcmp(e, "split") ? SPLIT : !strcmp(e, "cork") ? CORK : NONE;
  }
  return m;
}

ssize_t send(int fd, const void *buf, size_t len, int flags) {
  static ssize_t (*real)(int, const void *, size_t, int);
  if (!real) real = (ssize_t (*)(int, const void *, size_t, int))dlsym(RTLD_NEXT, "send");
  if (mode() == SPLIT) flags &= ~MSG_MORE;
  return real(fd, buf, len, flags);
}

ssize_t sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to,
               socklen_t tolen) {
  static ssize_t (*real)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
  if (!real)
    real = (ssize_t (*)(int, const void *, size_t, int, const struct sockaddr *,
                        socklen_t))dlsym(RTLD_NEXT, "sendto");
  if (mode() == SPLIT) flags &= ~MSG_MORE;
  return real(fd, buf, len, flags, to, tolen);
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags) {
  static ssize_t (*real)(int, const struct msghdr *, int);
  if (!real) real = (ssize_t (*)(int, const struct msghdr *, int))dlsym(RTLD_NEXT, "sendmsg");
  if (mode() == CORK) {
    size_t total = 0;
    for (size_t i = 0; i < msg->msg_iovlen; i++) total += msg->msg_iov[i].iov_len;
    if (total >= 40 && total <= 64) flags |= MSG_MORE;
  }
  return real(fd, msg, flags);
}
