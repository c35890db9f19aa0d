package kernel

import (
	"net/netip"
	"sync"
	"syscall"
)

// localAddrs are this machine's interface addresses, read once per run
// from the kernel's routing socket. Package net would do the same, but
// importing it links cgo's resolver, and with it the dynamic loader, into
// every start of lockctl (docs/performance.md).
var localAddrs = sync.OnceValue(func() map[netip.Addr]bool {
	m := map[netip.Addr]bool{}
	rib, err := syscall.NetlinkRIB(syscall.RTM_GETADDR, syscall.AF_UNSPEC)
	if err != nil {
		return m
	}
	msgs, err := syscall.ParseNetlinkMessage(rib)
	if err != nil {
		return m
	}
	for i := range msgs {
		if msgs[i].Header.Type != syscall.RTM_NEWADDR {
			continue
		}
		attrs, err := syscall.ParseNetlinkRouteAttr(&msgs[i])
		if err != nil {
			continue
		}
		if ip, ok := ifaAddr(attrs); ok {
			m[ip.Unmap()] = true
		}
	}
	return m
})

// ifaAddr is the address of one RTM_NEWADDR message: IFA_LOCAL where the
// message has one, IFA_ADDRESS otherwise. On a point-to-point link
// (ppp, a tunnel with a peer) IFA_ADDRESS is the far end's address, which
// must never count as this machine's: a lock its host wrote would then be
// judged by this machine's pids. Package net chooses the same way.
func ifaAddr(attrs []syscall.NetlinkRouteAttr) (netip.Addr, bool) {
	var addr []byte
	for _, a := range attrs {
		switch a.Attr.Type {
		case syscall.IFA_LOCAL:
			return netip.AddrFromSlice(a.Value)
		case syscall.IFA_ADDRESS:
			addr = a.Value
		}
	}
	return netip.AddrFromSlice(addr)
}

// IsLocalAddr implements verdict.AddrWitness: ip is a loopback address
// (Firefox writes the address its host name resolves to, 127.0.1.1 on
// Debian) or one of this machine's interfaces' addresses.
func (k *KernelEvidence) IsLocalAddr(ip string) bool {
	p, err := netip.ParseAddr(ip)
	if err != nil || p.Zone() != "" {
		return false
	}
	p = p.Unmap()
	return p.IsLoopback() || localAddrs()[p]
}
