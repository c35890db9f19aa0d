//go:build !linux

package kernel

import (
	"net"
	"sync"
)

// localAddrs are this machine's interface addresses, read once per run.
var localAddrs = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	as, err := net.InterfaceAddrs()
	if err != nil {
		return m
	}
	for _, a := range as {
		if n, ok := a.(*net.IPNet); ok {
			m[n.IP.String()] = true
		}
	}
	return m
})

// IsLocalAddr implements verdict.AddrWitness: ip is a loopback address
// (Firefox writes the address its host name resolves to, 127.0.1.1 on
// Debian) or one of this machine's interfaces' addresses.
func (k *KernelEvidence) IsLocalAddr(ip string) bool {
	p := net.ParseIP(ip)
	return p != nil && (p.IsLoopback() || localAddrs()[p.String()])
}
