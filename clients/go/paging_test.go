package tenantplane

import (
	"context"
	"errors"
	"reflect"
	"testing"
)

func TestAllPagesFollowsEveryToken(t *testing.T) {
	pages := map[string]Page[int]{
		"":   {Items: []int{1, 2}, Continue: pageToken("p2")},
		"p2": {Items: []int{3, 4}, Continue: pageToken("p3")},
		"p3": {Items: []int{5}},
	}
	var asked []string
	items, err := AllPages(context.Background(), func(_ context.Context, token *string) (Page[int], error) {
		key := ""
		if token != nil {
			key = *token
		}
		asked = append(asked, key)
		return pages[key], nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{1, 2, 3, 4, 5}; !reflect.DeepEqual(items, want) {
		t.Errorf("items = %v, want %v", items, want)
	}
	if want := []string{"", "p2", "p3"}; !reflect.DeepEqual(asked, want) {
		t.Errorf("tokens asked = %q, want %q", asked, want)
	}
}

func TestAllPagesStopsAtTheFirstError(t *testing.T) {
	failure := errors.New("410 CONTINUE_EXPIRED")
	calls := 0
	items, err := AllPages(context.Background(), func(_ context.Context, _ *string) (Page[int], error) {
		calls++
		if calls == 2 {
			return Page[int]{}, failure
		}
		return Page[int]{Items: []int{calls}, Continue: pageToken("next")}, nil
	})
	if !errors.Is(err, failure) || items != nil || calls != 2 {
		t.Errorf("AllPages = %v, %v after %d calls; want nil, %v after 2", items, err, calls, failure)
	}
}

func pageToken(s string) *string { return &s }
