package configcheck

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// BrokerPattern is a regular expression (RE2 and JSON Schema alike) of the
// addresses Broker accepts: host:port, the host without spaces, commas or
// colons unless in brackets ([::1]), the port from 1 to 65535. The Helm
// chart's schema holds every broker entry to it, so that helm install
// refuses what the collector would.
const BrokerPattern = `^([^\s,:\[\]]+|\[[^\s,\[\]]+\]):0*([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])$`

// TopicPattern is a Kafka topic name: 1 to 249 of a-z A-Z 0-9 . _ -; "."
// and ".." are not names either.
const TopicPattern = `^[a-zA-Z0-9._-]{1,249}$`

// Broker returns an error naming the key (brokers::1) unless address is
// host:port, as the Kafka client dials it.
func Broker(key, address string) error {
	if address == "" {
		return fmt.Errorf("%s: must not be empty", key)
	}
	// A comma-separated string is split into entries only when it is the
	// whole value (brokers: "a:9092,b:9092"); inside a list it stays one.
	if strings.Contains(address, ",") {
		var parts []string
		for p := range strings.SplitSeq(address, ",") {
			if p = strings.TrimSpace(p); p != "" {
				parts = append(parts, p)
			}
		}
		return fmt.Errorf("%s: %q is several addresses in one entry; list each on its own: [%s]", key, address, strings.Join(parts, ", "))
	}
	host, port, err := net.SplitHostPort(address)
	switch {
	case err != nil && strings.Contains(err.Error(), "missing port"):
		return fmt.Errorf("%s: %q has no port; write host:port, such as %s", key, address, net.JoinHostPort(strings.Trim(address, "[]"), "9092"))
	case err != nil:
		return fmt.Errorf("%s: %q is not host:port (an IPv6 address is written [::1]:9092)", key, address)
	case host == "":
		return fmt.Errorf("%s: %q has no host; write host:port, such as kafka-1%s", key, address, address)
	case strings.TrimSpace(host) != host || strings.ContainsAny(host, " \t"):
		return fmt.Errorf("%s: %q: the host must not contain spaces (a list in one string is split at each comma only)", key, address)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%s: %q: the port must be a number from 1 to 65535", key, address)
	}
	return nil
}
