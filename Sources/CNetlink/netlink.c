#include "CNetlink.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int hnl_open(uint32_t groups, int nonblocking) {
    int type = SOCK_RAW | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0);
    int fd = socket(AF_NETLINK, type, NETLINK_ROUTE);
    if (fd < 0) return -errno;
    struct sockaddr_nl address;
    memset(&address, 0, sizeof address);
    address.nl_family = AF_NETLINK;
    address.nl_groups = groups;
    if (bind(fd, (struct sockaddr *)&address, sizeof address) < 0) {
        int error = errno;
        close(fd);
        return -error;
    }
    return fd;
}

static int send_request(int fd, struct nlmsghdr *header) {
    struct sockaddr_nl kernel;
    memset(&kernel, 0, sizeof kernel);
    kernel.nl_family = AF_NETLINK;
    ssize_t sent;
    do {
        sent = sendto(fd, header, header->nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof kernel);
    } while (sent < 0 && errno == EINTR);
    if (sent < 0) return -errno;
    return sent == (ssize_t)header->nlmsg_len ? 0 : -EMSGSIZE;
}

int hnl_request_dump(int fd, uint16_t type, uint32_t seq) {
    // Every dump request carries a family header; for links and addresses an rtgenmsg is enough, and the
    // kernel accepts the longer ifinfomsg/rtmsg too. The largest of the three, zeroed: all families.
    struct {
        struct nlmsghdr header;
        union {
            struct ifinfomsg link;
            struct ifaddrmsg address;
            struct rtmsg route;
        } body;
    } request;
    memset(&request, 0, sizeof request);
    size_t body = type == RTM_GETLINK ? sizeof(struct ifinfomsg)
                : type == RTM_GETADDR ? sizeof(struct ifaddrmsg)
                                      : sizeof(struct rtmsg);
    request.header.nlmsg_len = NLMSG_LENGTH(body);
    request.header.nlmsg_type = type;
    request.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    request.header.nlmsg_seq = seq;
    return send_request(fd, &request.header);
}

int hnl_request_route(int fd, int family, const void *address, uint32_t seq) {
    size_t length = family == AF_INET ? 4 : family == AF_INET6 ? 16 : 0;
    if (length == 0) return -EAFNOSUPPORT;
    struct {
        struct nlmsghdr header;
        struct rtmsg route;
        char attributes[RTA_SPACE(16)];
    } request;
    memset(&request, 0, sizeof request);
    request.header.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
    request.header.nlmsg_type = RTM_GETROUTE;
    request.header.nlmsg_flags = NLM_F_REQUEST;
    request.header.nlmsg_seq = seq;
    request.route.rtm_family = (unsigned char)family;
    request.route.rtm_dst_len = (unsigned char)(length * 8);
    struct rtattr *destination = (struct rtattr *)((char *)&request + NLMSG_ALIGN(request.header.nlmsg_len));
    destination->rta_type = RTA_DST;
    destination->rta_len = RTA_LENGTH(length);
    memcpy(RTA_DATA(destination), address, length);
    request.header.nlmsg_len = NLMSG_ALIGN(request.header.nlmsg_len) + RTA_SPACE(length);
    return send_request(fd, &request.header);
}

ssize_t hnl_receive(int fd, void *buffer, size_t size) {
    ssize_t received;
    do {
        // MSG_TRUNC: the datagram's real length, so that one cut short by a small buffer is noticed.
        received = recv(fd, buffer, size, MSG_TRUNC);
    } while (received < 0 && errno == EINTR);
    if (received < 0) return -errno;
    return (size_t)received > size ? -EMSGSIZE : received;
}
