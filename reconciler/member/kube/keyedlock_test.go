package kube

import (
	"runtime"
	"sync"
	"testing"
)

func TestKeyedLockSerializesOneKeyAndForgetsItWhenFree(t *testing.T) {
	var l keyedLock[string]
	// Different keys do not wait for each other (a deadlock otherwise).
	unlockA := l.lock("a")
	unlockB := l.lock("b")
	if n := l.len(); n != 2 {
		t.Fatalf("keys held = %d, want 2", n)
	}
	unlockB()
	unlockA()
	if n := l.len(); n != 0 {
		t.Fatalf("keys remembered after every unlock = %d, want 0", n)
	}

	// Holders of one key exclude each other: the race detector reports
	// the unguarded counter otherwise.
	counter := 0
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			defer l.lock("a")()
			counter++
		})
	}
	wg.Wait()
	if counter != 50 {
		t.Fatalf("counter = %d, want 50", counter)
	}
	if n := l.len(); n != 0 {
		t.Fatalf("keys remembered after every unlock = %d, want 0", n)
	}
}

func TestKeyedLockWaiterKeepsTheKey(t *testing.T) {
	var l keyedLock[string]
	unlock := l.lock("a")
	acquired := make(chan func())
	go func() { acquired <- l.lock("a") }()
	// The waiter counts as a user before it blocks; the first holder's
	// unlock must not forget the key under it.
	for {
		l.mu.Lock()
		users := l.keys["a"].users
		l.mu.Unlock()
		if users == 2 {
			break
		}
		runtime.Gosched()
	}
	unlock()
	second := <-acquired
	if n := l.len(); n != 1 {
		t.Fatalf("keys held while the waiter holds a = %d, want 1", n)
	}
	second()
	if n := l.len(); n != 0 {
		t.Fatalf("keys remembered after every unlock = %d, want 0", n)
	}
}
