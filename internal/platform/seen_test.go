package platform_test

import (
	"strconv"
	"sync"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
)

func TestSeenForgetsTheOldestPastItsLimit(t *testing.T) {
	s := platform.NewSeen(2)
	if s.Has("a") {
		t.Fatal("an empty set has a")
	}
	s.Add("a")
	s.Add("b")
	s.Add("a") // already there: does not count as newer
	if !s.Has("a") || !s.Has("b") {
		t.Fatal("lost an id within the limit")
	}
	s.Add("c")
	if s.Has("a") {
		t.Error("the oldest id stayed past the limit")
	}
	if !s.Has("b") || !s.Has("c") {
		t.Error("lost one of the two newest ids")
	}
}

func TestSeenIsSafeForConcurrentUse(t *testing.T) {
	s := platform.NewSeen(platform.SeenLimit)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 100 {
				id := strconv.Itoa(g*1000 + i)
				s.Add(id)
				if !s.Has(id) {
					t.Errorf("%s not seen right after adding it", id)
				}
			}
		})
	}
	wg.Wait()
}
