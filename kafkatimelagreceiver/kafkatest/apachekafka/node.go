package apachekafka

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Node is one Kafka process: a broker, a combined node, or the controller.
type Node struct {
	// ID is the node.id.
	ID int
	// Addr is the plaintext client listener (none on the controller),
	// SecureAddr the SASL_SSL one (none without Options.SASLSSL).
	Addr, SecureAddr string
	// listenAddr is where the plaintext listener really is: Addr, or
	// behind Options.Wire's proxy on Addr, another port.
	listenAddr string

	c       *Cluster
	name    string
	props   string
	logPath string

	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
	paused  bool
}

// brokerJVM and toolJVM are the java flags of a node and of a tool: small
// heaps (the log cleaner's dedupe buffer is lowered to fit), the serial
// collector and the client compiler alone, which starts faster and spends
// less of two shared cores than the optimizing one.
var (
	brokerJVM = []string{"-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}
	toolJVM   = []string{"-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}
)

// layOut chooses the nodes' ports and writes their server.properties and
// the logging configs.
func (c *Cluster) layOut() error {
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	for name, level := range map[string]string{"log4j2.properties": "INFO", "tools-log4j2.properties": "WARN"} {
		conf := "appender.o.type=Console\nappender.o.name=O\nappender.o.target=SYSTEM_ERR\n" +
			"appender.o.layout.type=PatternLayout\nappender.o.layout.pattern=[%d] %p %m (%c)%n\n" +
			"rootLogger.level=" + level + "\nrootLogger.appenderRef.o.ref=O\n"
		if err := os.WriteFile(filepath.Join(c.dir, name), []byte(conf), 0o644); err != nil {
			return err
		}
	}
	next := 0
	port := func() (string, error) {
		p, err := c.port(next)
		next++
		return fmt.Sprintf("127.0.0.1:%d", p), err
	}
	combined := c.opts.Brokers == 1
	for i := range c.opts.Brokers {
		n := &Node{ID: i + 1, c: c, name: fmt.Sprintf("broker-%d", i+1)}
		var err error
		if n.Addr, err = port(); err != nil {
			return err
		}
		n.listenAddr = n.Addr
		if c.opts.Wire != nil {
			p, err := freePort()
			if err != nil {
				return err
			}
			n.listenAddr = fmt.Sprintf("127.0.0.1:%d", p)
		}
		if c.opts.SASLSSL != nil {
			if n.SecureAddr, err = port(); err != nil {
				return err
			}
		} else {
			next++
		}
		c.Nodes = append(c.Nodes, n)
	}
	controllerAddr, err := port()
	if err != nil {
		return err
	}
	voters := fmt.Sprintf("1@%s", controllerAddr)
	if !combined {
		c.controller = &Node{ID: 100, c: c, name: "controller"}
		voters = fmt.Sprintf("100@%s", controllerAddr)
	}
	rf := itoa(min(3, c.opts.Brokers))
	common := map[string]string{
		"controller.quorum.voters":                         voters,
		"controller.listener.names":                        "CONTROLLER",
		"inter.broker.listener.name":                       "PLAINTEXT",
		"listener.security.protocol.map":                   "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL",
		"offsets.topic.replication.factor":                 rf,
		"offsets.topic.num.partitions":                     "1",
		"transaction.state.log.replication.factor":         rf,
		"transaction.state.log.min.isr":                    "1",
		"transaction.state.log.num.partitions":             "1",
		"share.coordinator.state.topic.replication.factor": rf,
		"share.coordinator.state.topic.min.isr":            "1",
		"share.coordinator.state.topic.num.partitions":     "1",
		"group.initial.rebalance.delay.ms":                 "0",
		"auto.create.topics.enable":                        "false",
		// Tests of retention need the broker's deletion within seconds:
		// checks every second from the start, files removed at once.
		"log.retention.check.interval.ms": "1000",
		"log.initial.task.delay.ms":       "0",
		"log.segment.delete.delay.ms":     "0",
		// 128 MB by default, on the heap: too much for a test's JVM.
		"log.cleaner.dedupe.buffer.size": "16777216",
		"log.cleaner.backoff.ms":         "1000",
		// A killed or paused broker is fenced, and its partitions led
		// by others, within seconds rather than the default 9.
		"broker.session.timeout.ms":    "3000",
		"broker.heartbeat.interval.ms": "500",
	}
	if s := c.opts.SASLSSL; s != nil {
		pem := filepath.Join(c.dir, "broker.pem")
		if err := os.WriteFile(pem, append(append([]byte{}, s.KeyPEM...), s.CertPEM...), 0o600); err != nil {
			return err
		}
		maps := map[string]string{
			"sasl.enabled.mechanisms":                               "SCRAM-SHA-512",
			"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
			"listener.name.sasl_ssl.ssl.keystore.type":              "PEM",
			"listener.name.sasl_ssl.ssl.keystore.location":          pem,
			"authorizer.class.name":                                 "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			"super.users":                                           strings.Join(append([]string{"User:ANONYMOUS"}, s.SuperUsers...), ";"),
		}
		for k, v := range maps {
			common[k] = v
		}
	}
	for _, n := range c.Nodes {
		props := clone(common)
		props["node.id"] = itoa(n.ID)
		props["process.roles"] = "broker"
		advertised := []string{"PLAINTEXT://" + n.Addr}
		listeners := []string{"PLAINTEXT://" + n.listenAddr}
		if n.SecureAddr != "" {
			advertised = append(advertised, "SASL_SSL://"+n.SecureAddr)
			listeners = append(listeners, "SASL_SSL://"+n.SecureAddr)
		}
		props["advertised.listeners"] = strings.Join(advertised, ",")
		if combined {
			props["process.roles"] = "broker,controller"
			listeners = append(listeners, "CONTROLLER://"+controllerAddr)
		}
		props["listeners"] = strings.Join(listeners, ",")
		for k, v := range c.opts.Config {
			props[k] = v
		}
		if err := n.writeProps(props); err != nil {
			return err
		}
	}
	if c.controller != nil {
		props := clone(common)
		props["node.id"] = itoa(c.controller.ID)
		props["process.roles"] = "controller"
		props["listeners"] = "CONTROLLER://" + controllerAddr
		if err := c.controller.writeProps(props); err != nil {
			return err
		}
	}
	return nil
}

func clone(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (n *Node) writeProps(props map[string]string) error {
	dir := filepath.Join(n.c.dir, n.name)
	props["log.dirs"] = filepath.Join(dir, "data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, props[k])
	}
	n.props = filepath.Join(dir, "server.properties")
	n.logPath = filepath.Join(dir, "server.log")
	return os.WriteFile(n.props, []byte(b.String()), 0o644)
}

// format runs the storage tool on the node's data directory, with the SCRAM
// logins of a secured cluster.
func (c *Cluster) format(ctx context.Context, n *Node) error {
	args := []string{"format", "-t", c.clusterID, "-c", n.props}
	if s := c.opts.SASLSSL; s != nil {
		users := make([]string, 0, len(s.Users))
		for u := range s.Users {
			users = append(users, u)
		}
		sort.Strings(users)
		for _, u := range users {
			args = append(args, "--add-scram", fmt.Sprintf("SCRAM-SHA-512=[name=%s,password=%s]", u, s.Users[u]))
		}
	}
	_, err := c.Tool(ctx, "kafka.tools.StorageTool", args...)
	return err
}

// start launches the node's JVM, its output appended to its log.
func (n *Node) start() error {
	if n.Running() {
		return fmt.Errorf("%s is already running", n.name)
	}
	logFile, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	args := append(append([]string{}, brokerJVM...),
		"-cp", filepath.Join(n.c.lib, "*"),
		"-Dlog4j2.configurationFile="+filepath.Join(n.c.dir, "log4j2.properties"),
		"kafka.Kafka", n.props)
	cmd := exec.Command("java", args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = ownedProcess()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start %s: %w", n.name, err)
	}
	n.cmd, n.done, n.waitErr, n.paused = cmd, make(chan struct{}), nil, false
	done := n.done
	go func() {
		defer close(done)
		n.waitErr = cmd.Wait()
		logFile.Close()
	}()
	n.c.opts.Logf("apachekafka: %s started (pid %d)", n.name, cmd.Process.Pid)
	return nil
}

// Running says whether the node's process is up (paused counts as up).
func (n *Node) Running() bool {
	if n.cmd == nil {
		return false
	}
	select {
	case <-n.done:
		return false
	default:
		return true
	}
}

// Start starts a stopped or killed node again, on its data, and waits
// until the cluster's running brokers all serve metadata.
func (n *Node) Start(ctx context.Context) error {
	if err := n.start(); err != nil {
		return err
	}
	return n.c.WaitReady(ctx)
}

// Stop stops the node the way an operator does (SIGTERM, a controlled
// shutdown), and kills it if it is still up after 30 s.
func (n *Node) Stop() {
	if !n.Running() {
		return
	}
	if n.paused {
		n.Resume()
	}
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(30 * time.Second):
		n.c.opts.Logf("apachekafka: %s still up 30s after SIGTERM: killed", n.name)
		_ = n.cmd.Process.Kill()
		<-n.done
	}
	n.c.opts.Logf("apachekafka: %s stopped", n.name)
}

// Kill kills the node with SIGKILL, as a crash does, and waits for it.
func (n *Node) Kill() {
	if !n.Running() {
		return
	}
	_ = n.cmd.Process.Kill()
	<-n.done
	n.c.opts.Logf("apachekafka: %s killed", n.name)
}

// Pause stops the node's process with SIGSTOP: it keeps its connections
// and answers nothing, as a broker in a long GC pause or a frozen VM.
func (n *Node) Pause() error {
	if !n.Running() {
		return fmt.Errorf("%s is not running", n.name)
	}
	if err := n.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("pause %s: %w", n.name, err)
	}
	n.paused = true
	n.c.opts.Logf("apachekafka: %s paused", n.name)
	return nil
}

// Resume continues a paused node with SIGCONT.
func (n *Node) Resume() error {
	if !n.Running() {
		return fmt.Errorf("%s is not running", n.name)
	}
	if err := n.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		return fmt.Errorf("resume %s: %w", n.name, err)
	}
	n.paused = false
	n.c.opts.Logf("apachekafka: %s resumed", n.name)
	return nil
}

// LogPath is the node's log file.
func (n *Node) LogPath() string { return n.logPath }

// waitServing waits until the node answers metadata naming the brokers
// want, failing early if its process exits.
func (n *Node) waitServing(ctx context.Context, want []int32, controller *Node) error {
	var last error
	for {
		for _, p := range []*Node{n, controller} {
			if p != nil && p.cmd != nil && !p.Running() {
				return fmt.Errorf("%s exited while starting (%v): see %s", p.name, p.waitErr, p.logPath)
			}
		}
		got, err := n.brokersInMetadata(ctx)
		if err == nil {
			// A broker killed moments ago stays in metadata until
			// the controller fences it: only the running ones must be
			// there.
			if !slices.ContainsFunc(want, func(id int32) bool { return !slices.Contains(got, id) }) {
				return nil
			}
			last = fmt.Errorf("metadata names brokers %v, want %v", got, want)
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not serving after %v (%v): see %s", n.name, startTimeout, last, n.logPath)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// brokersInMetadata asks the node alone, on a connection of its own (a
// client kept across attempts answers from what it learnt before), which
// brokers its metadata names.
func (n *Node) brokersInMetadata(ctx context.Context) ([]int32, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr), kgo.DialTimeout(time.Second), kgo.RequestRetries(0))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	ids := make([]int32, 0, len(resp.Brokers))
	for _, b := range resp.Brokers {
		ids = append(ids, b.NodeID)
	}
	return ids, nil
}
