package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	tenantplane "github.com/tenantplane/tenantplane/clients/go"
)

// How often a wait reads the cluster: soon at first (a small cluster is ready in seconds),
// then less often, never less than every maxPollInterval.
const (
	firstPollInterval = 200 * time.Millisecond
	maxPollInterval   = 5 * time.Second
)

// errTimedOut is the error of a wait that reached its timeout.
var errTimedOut = errors.New("timed out")

// pollUntil calls poll until it says done or fails, within timeout: the error names what
// was awaited and, on a timeout, what poll last saw.
func pollUntil(ctx context.Context, timeout time.Duration, awaited string, poll func(context.Context) (bool, string, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	interval := firstPollInterval
	for {
		done, seen, err := poll(ctx)
		if err != nil && ctx.Err() == nil {
			return err
		}
		if done {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w after %s waiting for %s (last seen: %s)", errTimedOut, timeout, awaited, seen)
		}
		select {
		case <-ctx.Done():
		case <-time.After(interval):
		}
		interval = min(2*interval, maxPollInterval)
	}
}

// waitRunningAsDesired waits until the cluster runs what its spec asks for (at least
// “generation“; runningAsDesired) and answers it as last read.
func (c *apiClient) waitRunningAsDesired(ctx context.Context, name string, generation int, timeout time.Duration) (*tenantplane.ClusterRead, error) {
	var last *tenantplane.ClusterRead
	err := pollUntil(ctx, timeout, "cluster "+name+" to run as configured", func(ctx context.Context) (bool, string, error) {
		cluster, err := c.getCluster(ctx, name)
		if err != nil {
			return false, describe(last), err
		}
		last = cluster
		return runningAsDesired(cluster, generation), describe(cluster), nil
	})
	return last, err
}

// waitGone waits until the cluster answers 404.
func (c *apiClient) waitGone(ctx context.Context, name string, timeout time.Duration) error {
	seen := "not read yet"
	return pollUntil(ctx, timeout, "cluster "+name+" to be deleted", func(ctx context.Context) (bool, string, error) {
		cluster, err := c.getCluster(ctx, name)
		if tenantplane.IsNotFound(err) {
			return true, "gone", nil
		}
		if err != nil {
			return false, seen, err
		}
		seen = describe(cluster)
		return false, seen, nil
	})
}

// describe is what a timeout reports of the cluster last read.
func describe(cluster *tenantplane.ClusterRead) string {
	if cluster == nil {
		return "not read yet"
	}
	status := cluster.Status
	return fmt.Sprintf("phase %s, version %s running %s (VersionUpToDate %q), observed generation %d, HA configured %t",
		status.Phase, cluster.Version, status.KubernetesVersion, versionCondition(cluster), status.ObservedGeneration, status.HaConfigured)
}
