// Package webhooks delivers platform events to a deployment's governor_webhook_url: signed,
// queued in the database before the first attempt, retried with exponential backoff and
// jitter, sent by one daemon of a cluster, and never in the way of the API.
package webhooks

import (
	"math/rand/v2"
	"strconv"
	"time"
)

// Deployment config keys that tune delivery, with their defaults.
const (
	KeyMetricsInterval   = "webhook.metrics_interval"
	KeyTimeout           = "webhook.timeout"
	KeyRetryMaxAttempts  = "webhook.retry_max_attempts"
	KeyRetryInitialDelay = "webhook.retry_initial_delay"
	KeyRetryMaxDelay     = "webhook.retry_max_delay"
)

// Config is a deployment's delivery settings.
type Config struct {
	MetricsInterval time.Duration
	Timeout         time.Duration
	MaxAttempts     int
	InitialDelay    time.Duration
	MaxDelay        time.Duration
}

// ConfigFrom reads the settings from a deployment's config; validation already refused
// bad values, so an unreadable one falls back to the default.
func ConfigFrom(config map[string]string) Config {
	duration := func(key string, fallback time.Duration) time.Duration {
		d, err := time.ParseDuration(config[key])
		if err != nil {
			return fallback
		}

		return d
	}

	attempts, err := strconv.Atoi(config[KeyRetryMaxAttempts])
	if err != nil || attempts < 1 {
		attempts = 10
	}

	return Config{
		MetricsInterval: duration(KeyMetricsInterval, time.Minute),
		Timeout:         duration(KeyTimeout, 10*time.Second),
		MaxAttempts:     attempts,
		InitialDelay:    duration(KeyRetryInitialDelay, time.Second),
		MaxDelay:        duration(KeyRetryMaxDelay, 5*time.Minute),
	}
}

// Backoff is the wait before attempt number attempts+1: exponential from initial, capped at
// max, with jitter so that many failing deliveries do not retry in lockstep (half the
// delay fixed, half random).
func Backoff(attempts int, initial time.Duration, max time.Duration) time.Duration {
	// Doubling stops at max before it could overflow, whatever the configuration.
	delay := min(initial, max)
	for i := 1; i < attempts && delay < max; i++ {
		if delay > max/2 {
			delay = max
			break
		}

		delay *= 2
	}
	half := delay / 2
	return half + time.Duration(rand.Int64N(int64(half)+1))
}
