package kube

import "sync"

// keyedLock is a mutex per key: holders of one key run one at a time,
// holders of different keys at once. A key is forgotten as soon as no one
// holds or waits for it, so the map is as large as the keys in use, not
// every key ever locked.
type keyedLock[K comparable] struct {
	mu   sync.Mutex
	keys map[K]*keyedEntry
}

type keyedEntry struct {
	mu sync.Mutex
	// users hold or wait for mu; guarded by keyedLock.mu.
	users int
}

// lock holds key's lock until the returned func is called.
func (k *keyedLock[K]) lock(key K) (unlock func()) {
	k.mu.Lock()
	if k.keys == nil {
		k.keys = map[K]*keyedEntry{}
	}
	e, ok := k.keys[key]
	if !ok {
		e = &keyedEntry{}
		k.keys[key] = e
	}
	e.users++
	k.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		k.mu.Lock()
		if e.users--; e.users == 0 {
			delete(k.keys, key)
		}
		k.mu.Unlock()
	}
}

// len is how many keys are held or waited for.
func (k *keyedLock[K]) len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.keys)
}
