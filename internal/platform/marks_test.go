package platform_test

import (
	"strconv"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
)

// numeric ids, as Discord's and Slack's compare.
func newerNum(x, y string) bool {
	a, _ := strconv.Atoi(x)
	b, _ := strconv.Atoi(y)
	return a > b
}

func TestMarksKeepTheNewestOfTheLatestPlaces(t *testing.T) {
	ms := platform.NewMarks[string](2, newerNum)
	ms.Note("a", "guild-a", "10")
	ms.Note("a", "guild-a", "9") // older: ignored
	if mk, _ := ms.Get("a"); mk.Last != "10" || mk.Where != "guild-a" {
		t.Fatalf("a = %+v, want 10 in guild-a", mk)
	}
	ms.Pass("a", "12")
	ms.Pass("b", "5") // no mark: stays without
	if mk, _ := ms.Get("a"); mk.Last != "12" {
		t.Fatalf("a = %+v after passing 12", mk)
	}
	if _, ok := ms.Get("b"); ok {
		t.Fatal("passing a message made a mark")
	}
	ms.Note("b", "", "20")
	ms.Note("c", "", "30") // three places, two kept: a (12) goes
	if _, ok := ms.Get("a"); ok || ms.Len() != 2 {
		t.Fatalf("marks %v: the oldest place should have gone", ms.All())
	}
	saved := ms.All()
	again := platform.NewMarks[string](2, newerNum)
	again.Restore(saved)
	if got := again.All(); len(got) != 2 || got["b"].Last != "20" || got["c"].Last != "30" {
		t.Fatalf("restored %v, want %v", got, saved)
	}
	again.Forget("b")
	if _, ok := again.Get("b"); ok {
		t.Fatal("b is still marked after Forget")
	}
}
