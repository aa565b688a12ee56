package tenantplane

import "context"

// Page is one page of a list: its items, and the token of the next page (nil on the last).
type Page[T any] struct {
	Items    []T
	Continue *string
}

// AllPages walks a list to its last page: fetch is called with a nil token first, then with
// each page's continue token until a page has none, and the items of every page are returned
// in order. A list is never cut at its first page (the mistake of clients that read only
// items), and fetch's first error stops the walk.
//
//	secrets, err := tenantplane.AllPages(ctx, func(ctx context.Context, token *string) (tenantplane.Page[tenantplane.SecretRead], error) {
//		answer, err := client.ListSecretsWithResponse(ctx, tenant, &tenantplane.ListSecretsParams{Limit: &limit, Continue: token})
//		…
//		return tenantplane.Page[tenantplane.SecretRead]{Items: answer.JSON200.Items, Continue: answer.JSON200.Continue}, nil
//	})
func AllPages[T any](ctx context.Context, fetch func(ctx context.Context, token *string) (Page[T], error)) ([]T, error) {
	var items []T
	var token *string
	for {
		page, err := fetch(ctx, token)
		if err != nil {
			return nil, err
		}
		items = append(items, page.Items...)
		if page.Continue == nil {
			return items, nil
		}
		token = page.Continue
	}
}
