package waker

import (
	"log/slog"
	"sync"
	"time"
)

// Spec is one shape's hold as the daemon wants it.
type Spec struct {
	Key      string
	Protocol string
	Max      int
	Timeout  time.Duration
	// Targets are the shape's serving instances (host:port).
	Targets []string
}

// SetConfig is what a Set is built from.
type SetConfig struct {
	// Host is the address the holds listen on (each on a port of its own); default
	// 127.0.0.1, where a private front door reaches them.
	Host string
	// Wake asks for capacity for the shape of key, with how many connections wait.
	Wake func(key string, waiting int)
	// Waiting is called while connections wait without a target (see Config.Waiting).
	Waiting func()
	Logger  *slog.Logger
}

// Set keeps one Hold per shape that may scale to zero.
type Set struct {
	cfg   SetConfig
	mu    sync.Mutex
	holds map[string]*Hold
}

// NewSet returns an empty set.
func NewSet(c SetConfig) *Set {
	if c.Host == "" {
		c.Host = "127.0.0.1"
	}

	if c.Logger == nil {
		c.Logger = slog.Default()
	}

	return &Set{cfg: c, holds: map[string]*Hold{}}
}

// Sync makes the set hold exactly the shapes of specs, and returns where each listens by
// key (a shape whose hold could not listen is left out, and logged).
func (s *Set) Sync(specs []Spec) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	want := map[string]bool{}
	out := map[string]string{}
	for _, spec := range specs {
		want[spec.Key] = true
		h, ok := s.holds[spec.Key]
		if ok && h.cfg.Protocol != spec.Protocol {
			h.Close()
			delete(s.holds, spec.Key)
			ok = false
		}

		if !ok {
			key := spec.Key
			var err error
			h, err = Listen(s.cfg.Host+":0", Config{
				Key: key, Protocol: spec.Protocol, Max: spec.Max, Timeout: spec.Timeout, Logger: s.cfg.Logger,
				Wake: func(waiting int) {
					s.mu.Lock()
					wake := s.cfg.Wake
					s.mu.Unlock()
					if wake != nil {
						wake(key, waiting)
					}
				},
				Waiting: func() {
					s.mu.Lock()
					waiting := s.cfg.Waiting
					s.mu.Unlock()
					if waiting != nil {
						waiting()
					}
				},
			})
			if err != nil {
				s.cfg.Logger.Warn("front door: no hold for a shape that may scale to zero", "shape", key, "err", err)
				continue
			}

			s.holds[key] = h
		}

		h.SetLimits(spec.Max, spec.Timeout)
		h.SetTargets(spec.Targets)
		out[spec.Key] = h.Addr()
	}

	for key, h := range s.holds {
		if !want[key] {
			h.Close()
			delete(s.holds, key)
		}
	}

	return out
}

// Pending is how many connections wait for the shape of key.
func (s *Set) Pending(key string) int {
	s.mu.Lock()
	h := s.holds[key]
	s.mu.Unlock()
	if h == nil {
		return 0
	}

	return h.Pending()
}

// Close closes every hold.
func (s *Set) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, h := range s.holds {
		h.Close()
		delete(s.holds, key)
	}
}
