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
		for _, a := range attrs {
			if a.Attr.Type != syscall.IFA_ADDRESS && a.Attr.Type != syscall.IFA_LOCAL {
				continue
			}
			if ip, ok := netip.AddrFromSlice(a.Value); ok {
				m[ip.Unmap()] = true
			}
		}
	}
	return m
})

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
