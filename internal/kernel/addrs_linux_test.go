package kernel

import (
	"net"
	"testing"
)

// The routing socket's answer must be package net's: a Firefox lock
// written with one of this machine's addresses is this machine's.
func TestIsLocalAddrMatchesNet(t *testing.T) {
	as, err := net.InterfaceAddrs()
	if err != nil {
		t.Skipf("net.InterfaceAddrs: %v", err)
	}
	k := &KernelEvidence{}
	for _, a := range as {
		if n, ok := a.(*net.IPNet); ok {
			if !k.IsLocalAddr(n.IP.String()) {
				t.Errorf("IsLocalAddr(%s) = false; it is an address of this machine", n.IP)
			}
		}
	}
	for ip, want := range map[string]bool{
		"127.0.0.1":        true,
		"127.0.1.1":        true,
		"::1":              true,
		"::ffff:127.0.0.1": true,
		"192.0.2.1":        false, // TEST-NET-1, never assigned
		"2001:db8::1":      false,
		"fe80::1%eth0":     false,
		"localhost":        false,
		"":                 false,
	} {
		if got := k.IsLocalAddr(ip); got != want {
			t.Errorf("IsLocalAddr(%q) = %v, want %v", ip, got, want)
		}
	}
}
