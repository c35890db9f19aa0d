package kernel

import (
	"net"
	"os"
	"os/exec"
	"strings"
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

// And nothing more: every address the routing socket gives is one package
// net lists too.
func TestLocalAddrsAreNets(t *testing.T) {
	as, err := net.InterfaceAddrs()
	if err != nil {
		t.Skipf("net.InterfaceAddrs: %v", err)
	}
	nets := map[string]bool{}
	for _, a := range as {
		if n, ok := a.(*net.IPNet); ok {
			nets[n.IP.String()] = true
		}
	}
	for ip := range localAddrs() {
		if !nets[ip.String()] {
			t.Errorf("the routing socket gives %s, which net.InterfaceAddrs does not list", ip)
		}
	}
}

const addrsHelperEnv = "LOCKCTL_TEST_ADDRS_P2P"

// On a point-to-point link the far end's address is not this machine's,
// though the kernel's message about the link carries it (IFA_ADDRESS, with
// this end's as IFA_LOCAL): a Firefox lock the peer host wrote must not be
// judged by this machine's pids. The link is made in a network namespace of
// its own.
func TestIsLocalAddrPointToPoint(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("unshare --net needs root")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare (util-linux)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip(8) (iproute2)")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(unshare, "--net", "sh", "-c",
		`ip link set lo up && ip addr add 10.9.0.1 peer 10.9.0.2/32 dev lo && exec "$0" -test.run='^TestIsLocalAddrPointToPointHelper$' -test.count=1 -test.v`, self)
	cmd.Env = append(os.Environ(), addrsHelperEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("in a network namespace with a point-to-point address: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestIsLocalAddrPointToPointHelper") {
		t.Fatalf("the helper did not run:\n%s", out)
	}
}

func TestIsLocalAddrPointToPointHelper(t *testing.T) {
	if os.Getenv(addrsHelperEnv) == "" {
		t.Skip("run by TestIsLocalAddrPointToPoint")
	}
	k := &KernelEvidence{}
	if !k.IsLocalAddr("10.9.0.1") {
		t.Errorf("IsLocalAddr(10.9.0.1) = false: it is this end of the link")
	}
	if k.IsLocalAddr("10.9.0.2") {
		t.Errorf("IsLocalAddr(10.9.0.2) = true: it is the far end of a point-to-point link")
	}
}
