package oauthbearer_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/oauthbearer"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// countingSource hands out token-1, token-2, ... each expiring after
// lifetime, and counts the calls.
type countingSource struct {
	lifetime time.Duration
	calls    atomic.Int32
}

func (s *countingSource) Token(context.Context) (oauthbearer.Token, error) {
	n := s.calls.Add(1)
	return oauthbearer.Token{Value: fmt.Sprintf("token-%d", n), Expiry: time.Now().Add(s.lifetime)}, nil
}

func TestCacheReusesUntilShortlyBeforeExpiry(t *testing.T) {
	long := &countingSource{lifetime: time.Hour}
	c := oauthbearer.NewCache(long.Token, time.Second)
	for range 5 {
		tok, err := c.Token(context.Background())
		require.NoError(t, err)
		require.Equal(t, "token-1", tok, "a token valid for an hour is reused")
	}
	require.EqualValues(t, 1, long.calls.Load())

	// A token inside the refresh margin is replaced at every call: it would
	// be refused before the connection re-authenticates.
	short := &countingSource{lifetime: oauthbearer.RefreshBefore / 2}
	c = oauthbearer.NewCache(short.Token, time.Second)
	for i := 1; i <= 3; i++ {
		tok, err := c.Token(context.Background())
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("token-%d", i), tok)
	}

	// No expiry said: asked again every time.
	var calls atomic.Int32
	c = oauthbearer.NewCache(func(context.Context) (oauthbearer.Token, error) {
		return oauthbearer.Token{Value: fmt.Sprintf("t%d", calls.Add(1))}, nil
	}, time.Second)
	for range 2 {
		_, err := c.Token(context.Background())
		require.NoError(t, err)
	}
	require.EqualValues(t, 2, calls.Load())
}

func TestCacheInvalidate(t *testing.T) {
	src := &countingSource{lifetime: time.Hour}
	c := oauthbearer.NewCache(src.Token, time.Second)
	tok, err := c.Token(context.Background())
	require.NoError(t, err)
	require.Equal(t, "token-1", tok)
	c.Invalidate("token-1")
	tok, err = c.Token(context.Background())
	require.NoError(t, err)
	require.Equal(t, "token-2", tok, "a refused token is not handed out again")
	c.Invalidate("token-1")
	tok, err = c.Token(context.Background())
	require.NoError(t, err)
	require.Equal(t, "token-2", tok, "a later refusal of the replaced token keeps its replacement")
}

func TestCacheErrorsAreNotRemembered(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	c := oauthbearer.NewCache(func(context.Context) (oauthbearer.Token, error) {
		if fail.Load() {
			return oauthbearer.Token{}, errors.New("identity provider down")
		}
		return oauthbearer.Token{Value: "ok", Expiry: time.Now().Add(time.Hour)}, nil
	}, time.Second)
	_, err := c.Token(context.Background())
	require.ErrorContains(t, err, "identity provider down")
	fail.Store(false)
	tok, err := c.Token(context.Background())
	require.NoError(t, err)
	require.Equal(t, "ok", tok)

	empty := oauthbearer.NewCache(func(context.Context) (oauthbearer.Token, error) {
		return oauthbearer.Token{Expiry: time.Now().Add(time.Hour)}, nil
	}, time.Second)
	_, err = empty.Token(context.Background())
	require.ErrorContains(t, err, "empty token")
}

// TestCacheSharesOneFetch: the connections opened at once to every broker
// cost one request to the identity provider.
func TestCacheSharesOneFetch(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int32
	c := oauthbearer.NewCache(func(context.Context) (oauthbearer.Token, error) {
		calls.Add(1)
		<-release
		return oauthbearer.Token{Value: "shared", Expiry: time.Now().Add(time.Hour)}, nil
	}, time.Minute)
	const callers = 8
	var (
		wg     sync.WaitGroup
		tokens = make([]string, callers)
		errs   = make([]error, callers)
	)
	for i := range callers {
		wg.Go(func() { tokens[i], errs[i] = c.Token(context.Background()) })
	}
	require.Eventually(t, func() bool { return calls.Load() == 1 }, 10*time.Second, time.Millisecond)
	close(release)
	wg.Wait()
	for i := range callers {
		require.NoError(t, errs[i])
		require.Equal(t, "shared", tokens[i])
	}
	require.EqualValues(t, 1, calls.Load())
}

func TestCacheDeadlines(t *testing.T) {
	// The fetch gets the cache's timeout even when the caller has none.
	c := oauthbearer.NewCache(func(ctx context.Context) (oauthbearer.Token, error) {
		<-ctx.Done()
		return oauthbearer.Token{}, ctx.Err()
	}, 10*time.Millisecond)
	_, err := c.Token(context.Background())
	require.ErrorIs(t, err, context.DeadlineExceeded)

	// A waiter whose own context ends stops waiting; the fetch goes on for
	// the caller that runs it.
	release := make(chan struct{})
	started := make(chan struct{})
	c = oauthbearer.NewCache(func(context.Context) (oauthbearer.Token, error) {
		close(started)
		<-release
		return oauthbearer.Token{Value: "late", Expiry: time.Now().Add(time.Hour)}, nil
	}, time.Minute)
	var (
		wg       sync.WaitGroup
		firstTok string
		firstErr error
	)
	wg.Go(func() { firstTok, firstErr = c.Token(context.Background()) })
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.Token(ctx)
	require.ErrorIs(t, err, context.Canceled)
	close(release)
	wg.Wait()
	require.NoError(t, firstErr)
	require.Equal(t, "late", firstTok)
}
