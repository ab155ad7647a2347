package nonce

import (
	"fmt"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

func TestRedisUnmarshalCaddyfile(t *testing.T) {
	dur := func(d time.Duration) caddy.Duration { return caddy.Duration(d) }
	tests := []struct {
		name    string
		input   string
		want    Redis
		wantErr string
	}{
		{"one-line address", `redis 127.0.0.1:6380`, Redis{Address: "127.0.0.1:6380"}, ""},
		{"address option", "redis {\n address 127.0.0.1:6380\n}", Redis{Address: "127.0.0.1:6380"}, ""},
		{"cluster", "redis {\n addresses a:7000 b:7001 c:7002\n}", Redis{Addresses: []string{"a:7000", "b:7001", "c:7002"}}, ""},
		{"everything", `redis {
			addresses s1:26379 s2:26379
			master_name mymaster
			db 3
			username gw
			password {env.REDIS_PASSWORD}
			sentinel_password {env.SENTINEL_PASSWORD}
			tls {
				ca_file /etc/ca.pem
				cert_file /etc/c.pem
				key_file /etc/k.pem
				server_name redis.internal
			}
			key_prefix gw:
			dial_timeout 2s
			read_timeout 300ms
			write_timeout 400ms
			pool_size 32
			ping_interval 5s
			require_clean_start
		}`, Redis{
			Addresses: []string{"s1:26379", "s2:26379"}, MasterName: "mymaster", DB: 3, Username: "gw",
			Password: "{env.REDIS_PASSWORD}", SentinelPassword: "{env.SENTINEL_PASSWORD}",
			TLS:       &RedisTLS{CAFile: "/etc/ca.pem", CertFile: "/etc/c.pem", KeyFile: "/etc/k.pem", ServerName: "redis.internal"},
			KeyPrefix: "gw:", DialTimeout: dur(2 * time.Second), ReadTimeout: dur(300 * time.Millisecond),
			WriteTimeout: dur(400 * time.Millisecond), PoolSize: 32, PingInterval: dur(5 * time.Second),
			RequireCleanStart: true,
		}, ""},
		{"tls without block", "redis {\n address a:1\n tls\n}", Redis{Address: "a:1", TLS: &RedisTLS{}}, ""},
		{"two one-line args", `redis a:1 b:2`, Redis{}, "wrong argument count"},
		{"one-line and address option", "redis a:1 {\n address b:2\n}", Redis{}, `duplicate option "address"`},
		{"duplicate option", "redis {\n db 1\n db 2\n}", Redis{}, `duplicate option "db"`},
		{"unknown option", "redis {\n host a\n}", Redis{}, `unknown redis nonce store option "host"`},
		{"address missing", "redis {\n address\n}", Redis{}, "wrong argument count"},
		{"address two args", "redis {\n address a:1 b:2\n}", Redis{}, "wrong argument count"},
		{"addresses missing", "redis {\n addresses\n}", Redis{}, "wrong argument count"},
		{"master_name missing", "redis {\n master_name\n}", Redis{}, "wrong argument count"},
		{"db missing", "redis {\n db\n}", Redis{}, "wrong argument count"},
		{"db not a number", "redis {\n db one\n}", Redis{}, `db: "one" is not a database number`},
		{"db negative", "redis {\n db -1\n}", Redis{}, `db: "-1" is not a database number`},
		{"username missing", "redis {\n username\n}", Redis{}, "wrong argument count"},
		{"password missing", "redis {\n password\n}", Redis{}, "wrong argument count"},
		{"sentinel_password missing", "redis {\n sentinel_password\n}", Redis{}, "wrong argument count"},
		{"key_prefix missing", "redis {\n key_prefix\n}", Redis{}, "wrong argument count"},
		{"dial_timeout bad", "redis {\n dial_timeout fast\n}", Redis{}, `dial_timeout: parsing duration "fast"`},
		{"read_timeout zero", "redis {\n read_timeout 0s\n}", Redis{}, "read_timeout: must be positive"},
		{"write_timeout missing", "redis {\n write_timeout\n}", Redis{}, "wrong argument count"},
		{"ping_interval bad", "redis {\n ping_interval x\n}", Redis{}, `ping_interval: parsing duration "x"`},
		{"clean_start_leeway is gone", "redis {\n clean_start_leeway 30s\n}", Redis{}, `unknown redis nonce store option "clean_start_leeway"`},
		{"pool_size missing", "redis {\n pool_size\n}", Redis{}, "wrong argument count"},
		{"pool_size zero", "redis {\n pool_size 0\n}", Redis{}, "pool_size: must be positive"},
		{"pool_size not a number", "redis {\n pool_size many\n}", Redis{}, `pool_size: "many" is not an integer`},
		{"require_clean_start with argument", "redis {\n require_clean_start yes\n}", Redis{}, "wrong argument count"},
		{"tls argument", "redis {\n tls on\n}", Redis{}, "wrong argument count"},
		{"tls unknown option", "redis {\n tls {\n ca x\n }\n}", Redis{}, `unknown tls option "ca"`},
		{"tls duplicate option", "redis {\n tls {\n ca_file x\n ca_file y\n }\n}", Redis{}, `duplicate tls option "ca_file"`},
		{"tls ca_file missing", "redis {\n tls {\n ca_file\n }\n}", Redis{}, "wrong argument count"},
		{"tls cert_file missing", "redis {\n tls {\n cert_file\n }\n}", Redis{}, "wrong argument count"},
		{"tls key_file missing", "redis {\n tls {\n key_file\n }\n}", Redis{}, "wrong argument count"},
		{"tls server_name missing", "redis {\n tls {\n server_name\n }\n}", Redis{}, "wrong argument count"},
		{"tls insecure_skip_verify refused", "redis {\n tls {\n insecure_skip_verify\n }\n}", Redis{}, "insecure_skip_verify is not offered"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Redis
			err := got.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tt.input))
			checkUnmarshal(t, tt.input, err, tt.wantErr)
			if tt.wantErr != "" {
				return
			}
			gotTLS, wantTLS := got.TLS, tt.want.TLS
			got.TLS, tt.want.TLS = nil, nil
			if g, w := fmt.Sprintf("%+v %+v", got, gotTLS), fmt.Sprintf("%+v %+v", tt.want, wantTLS); g != w {
				t.Errorf("UnmarshalCaddyfile(%q) =\n%s\nwant\n%s", tt.input, g, w)
			}
		})
	}
}
