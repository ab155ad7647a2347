package nonce

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisBuckets is the number of hash-tag buckets a key falls in (the first byte of its
// hash). Keys of one bucket live in one Cluster slot, so the clean-start guard's script can
// read the bucket's marker and write the nonce atomically, while 256 buckets still spread
// the load over the masters of a Cluster.
const redisBuckets = 256

// claimScriptSource is the claim with the clean-start guard, one atomic step on the key's
// slot: KEYS[1] the nonce key, KEYS[2] its bucket's marker; ARGV[1] the expiry (Unix ms),
// ARGV[2] the earliest time the token was acceptable less ClockSkewMargin (Unix ms), ARGV[3]
// now (Unix ms). It answers 1 fresh, 0 replayed, -1 acceptable before the marker.
const claimScriptSource = `
local epoch = redis.call('GET', KEYS[2])
if not epoch then
	epoch = ARGV[3]
	redis.call('SET', KEYS[2], epoch)
end
if tonumber(ARGV[2]) < tonumber(epoch) then
	return -1
end
if redis.call('SET', KEYS[1], '1', 'NX', 'PXAT', ARGV[1]) then
	return 1
end
return 0
`

// claimScriptSHA is the SHA-1 that EVALSHA runs the script by.
var claimScriptSHA = redis.NewScript(claimScriptSource).Hash()

// The claim's commands are sent at most once. MaxRetries -1 stops a single server's or
// Sentinel client's retries, but a ClusterClient re-sends a command after a timeout or a
// dropped connection within its MaxRedirects loop, and only the command's NoRetry stops
// that. A claim whose reply was lost may have been applied: sent again, SET NX finds the
// key its first attempt wrote and answers nil, so a fresh token would be refused as a
// replay (409) instead of 503, after up to four read timeouts. go-redis still follows
// MOVED and ASK (and READONLY) for a NoRetry command: there the command was not run.
type (
	onceStatusCmd struct{ *redis.StatusCmd }
	onceCmd       struct{ *redis.Cmd }
)

func (onceStatusCmd) NoRetry() bool { return true }
func (onceCmd) NoRetry() bool       { return true }

// evalOnce sends name (evalsha or eval) with script, keys and args once and returns the
// command with its reply, or the error that kept it from one.
func evalOnce(ctx context.Context, c *redisConn, name, script string, keys []string, args ...any) (*redis.Cmd, error) {
	a := make([]any, 0, 3+len(keys)+len(args))
	a = append(a, name, script, len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	a = append(a, args...)
	cmd := redis.NewCmd(ctx, a...)
	cmd.SetFirstKeyPos(3) // the Cluster slot is the first key's
	if err := c.send(ctx, keys[0], onceCmd{cmd}); err != nil {
		return nil, err
	}
	return cmd, nil
}

// Claim implements Store.
func (r *Redis) Claim(ctx context.Context, e Entry) (bool, error) {
	if r.conn == nil {
		return false, errors.New("redis nonce store not provisioned")
	}
	start := time.Now()
	fresh, err := r.claim(ctx, e)
	r.metrics.observe(r.target, time.Since(start), fresh, err)
	return fresh, err
}

func (r *Redis) claim(ctx context.Context, e Entry) (bool, error) {
	bucket, hash := redisKeyParts(e.Partner, e.Nonce)
	key := r.KeyPrefix + bucket + hash
	// Rounded up to the millisecond, and ClockSkewMargin later by Redis's clock: the key
	// must not vanish while any gateway still accepts the token.
	untilMS := (e.Until.Add(ClockSkewMargin).UnixNano() + int64(time.Millisecond) - 1) / int64(time.Millisecond)
	c := r.conn
	if !r.RequireCleanStart {
		cmd := redis.NewStatusCmd(ctx, "set", key, "1", "nx", "pxat", untilMS)
		if err := c.send(ctx, key, onceStatusCmd{cmd}); err != nil {
			return false, fmt.Errorf("claiming nonce in redis: %w", err)
		}
		v, err := cmd.Result()
		switch {
		case errors.Is(err, redis.Nil):
			return false, nil
		case err != nil:
			return false, fmt.Errorf("claiming nonce in redis: %w", err)
		case v == "OK":
			return true, nil
		default:
			return false, fmt.Errorf("claiming nonce in redis: unexpected reply %.40q", v)
		}
	}
	from := e.AcceptableFrom.Add(-ClockSkewMargin).UnixMilli()
	keys := []string{key, r.KeyPrefix + bucket + "epoch"}
	cmd, err := evalOnce(ctx, c, "evalsha", claimScriptSHA, keys, untilMS, from, r.now().UnixMilli())
	if err == nil && redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		// the script was not run (a new or restarted server): sending it is no retry
		cmd, err = evalOnce(ctx, c, "eval", claimScriptSource, keys, untilMS, from, r.now().UnixMilli())
	}
	var v int64
	if err == nil {
		v, err = cmd.Int64()
	}
	switch {
	case err != nil:
		return false, fmt.Errorf("claiming nonce in redis: %w", err)
	case v == 1:
		return true, nil
	case v == 0:
		return false, nil
	case v == -1:
		return false, ErrTooOld
	default:
		return false, fmt.Errorf("claiming nonce in redis: unexpected reply %d", v)
	}
}

// redisKeyParts returns the hash-tag bucket "{bb}" and the base64url 128-bit hash of a
// partner's nonce. The partner is length-prefixed so that no (partner, nonce) pair can be
// spelled as another.
func redisKeyParts(partner, nonce string) (bucket, hash string) {
	var buf [512]byte
	b := buf[:0]
	if n := binary.MaxVarintLen64 + len(partner) + len(nonce); n > len(buf) {
		b = make([]byte, 0, n)
	}
	b = binary.AppendUvarint(b, uint64(len(partner)))
	b = append(b, partner...)
	b = append(b, nonce...)
	sum := sha256.Sum256(b)
	return bucketTags[sum[0]], base64.RawURLEncoding.EncodeToString(sum[:16])
}

// bucketTags are the 256 hash tags "{00}" … "{ff}", made once.
var bucketTags = func() (tags [redisBuckets]string) {
	for i := range tags {
		tags[i] = "{" + hex.EncodeToString([]byte{byte(i)}) + "}"
	}
	return tags
}()

// keepMarkers writes the clean-start marker of every bucket that has none, at start and
// every interval until the config is unloaded. The claim script writes a missing marker
// too, but only for its own bucket; writing them all at once means that after a new or
// wiped Redis every bucket starts remembering at the same moment, so the guard refuses new
// tokens for one partner leeway (plus ClockSkewMargin) after that moment rather than after
// the first use of each bucket.
func (r *Redis) keepMarkers(ctx context.Context, client redis.UniversalClient, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		r.writeMarkers(ctx, client, interval)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r *Redis) writeMarkers(ctx context.Context, client redis.UniversalClient, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	now := r.now().UnixMilli()
	// pipelined: go-redis splits the pipeline by slot on a Cluster
	_, _ = client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for b := range redisBuckets {
			p.SetNX(ctx, r.KeyPrefix+bucketTags[b]+"epoch", now, 0)
		}
		return nil
	})
}

// Interface guards
var _ Store = (*Redis)(nil)
