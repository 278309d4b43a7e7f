#ifndef C_NETLINK_H
#define C_NETLINK_H

// The kernel's routing netlink (NETLINK_ROUTE) for Herald's reachability: the kernel's own headers, so that
// Swift reads the message layouts and constants from them, plus the few calls Swift can't spell (socket
// addresses, message headers) and the alignment macros, as functions.

#include <linux/if.h>
#include <linux/if_arp.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/// The multicast groups a reachability monitor listens to: links, IPv4 and IPv6 addresses, routes and policy
/// rules (a rule alone changes which route the kernel picks, and announces no route). IPv6's rule group has no
/// RTMGRP_ constant.
static const uint32_t hnl_reachability_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR
    | RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE | RTMGRP_IPV4_RULE | (1u << (RTNLGRP_IPV6_RULE - 1));

/// Opens a NETLINK_ROUTE socket, close-on-exec, bound to `groups` (0: none, for requests only), non-blocking
/// when `nonblocking` is not 0. Returns the descriptor, or -errno.
int hnl_open(uint32_t groups, int nonblocking);

/// Asks for a dump of every object of `type` (RTM_GETLINK, RTM_GETADDR or RTM_GETROUTE), all address
/// families, with sequence number `seq`. Returns 0, or -errno.
int hnl_request_dump(int fd, uint16_t type, uint32_t seq);

/// Asks for the route the kernel would pick for `address` (4 bytes for AF_INET, 16 for AF_INET6), with
/// sequence number `seq`. Returns 0, or -errno.
int hnl_request_route(int fd, int family, const void *_Nonnull address, uint32_t seq);

/// Receives one datagram of messages into `buffer`. Returns its length, or -errno (-EAGAIN: nothing waiting;
/// -ENOBUFS: the kernel dropped messages because the socket's buffer was full; -EMSGSIZE: the datagram was
/// longer than `size` and was cut).
ssize_t hnl_receive(int fd, void *_Nonnull buffer, size_t size);

/// NLMSG_ALIGN and RTA_ALIGN: the padding between messages and between attributes.
static inline size_t hnl_message_align(size_t length) { return NLMSG_ALIGN(length); }
static inline size_t hnl_attribute_align(size_t length) { return RTA_ALIGN(length); }

#endif
