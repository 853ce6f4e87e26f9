package apachekafka

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Kafka's command-line tools, by the main classes of the 4.4 jars (the
// scripts of Kafka's release archive run the same classes).
const (
	ConsumerGroups       = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand" // kafka-consumer-groups
	ShareGroups          = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"    // kafka-share-groups
	ProducerPerformance  = "org.apache.kafka.tools.ProducerPerformance"                 // kafka-producer-perf-test
	ConsoleConsumer      = "org.apache.kafka.tools.consumer.ConsoleConsumer"            // kafka-console-consumer
	ConsoleShareConsumer = "org.apache.kafka.tools.consumer.ConsoleShareConsumer"       // kafka-console-share-consumer
	Configs              = "org.apache.kafka.tools.ConfigCommand"                       // kafka-configs
	Topics               = "org.apache.kafka.tools.TopicCommand"                        // kafka-topics
	Acls                 = "org.apache.kafka.tools.AclCommand"                          // kafka-acls
	DeleteRecords        = "org.apache.kafka.tools.DeleteRecordsCommand"                // kafka-delete-records
	ReassignPartitions   = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"  // kafka-reassign-partitions
)

// toolTimeout bounds a tool run that its context does not.
const toolTimeout = 2 * time.Minute

// Tool runs one of Kafka's tools (a main class, e.g. ConsumerGroups) with
// args to its end and returns its standard output; an error carries its
// standard error.
func (c *Cluster) Tool(ctx context.Context, class string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, toolTimeout)
	defer cancel()
	cmd := c.toolCommand(class, args)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start %s: %w", class, err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var err error
	select {
	case err = <-waited:
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-waited
		err = ctx.Err()
	}
	c.opts.Logf("apachekafka: %s %s", shortName(class), strings.Join(args, " "))
	if err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w: %s", shortName(class), strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// Process is a tool left running (a consumer, a producer): Stop ends it.
type Process struct {
	name    string
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
	out     *os.File
}

// StartTool starts a tool that runs until stopped; its output goes to a
// file in the cluster's directory, named after name.
func (c *Cluster) StartTool(class, name string, args ...string) (*Process, error) {
	out, err := os.Create(filepath.Join(c.dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := c.toolCommand(class, args)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start %s: %w", class, err)
	}
	p := &Process{name: name, cmd: cmd, done: make(chan struct{}), out: out}
	go func() {
		defer close(p.done)
		p.waitErr = cmd.Wait()
		out.Close()
	}()
	c.opts.Logf("apachekafka: %s started: %s %s", name, shortName(class), strings.Join(args, " "))
	return p, nil
}

// Stop ends the tool (SIGTERM, which Kafka's clients take as a clean
// close; SIGKILL after 20 s) and waits for it.
func (p *Process) Stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Exited says whether the tool has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// Output is what the tool printed so far.
func (p *Process) Output() string {
	b, _ := os.ReadFile(p.out.Name())
	return string(b)
}

func (c *Cluster) toolCommand(class string, args []string) *exec.Cmd {
	jvm := append(append([]string{}, toolJVM...),
		"-cp", filepath.Join(c.lib, "*"),
		"-Dlog4j2.configurationFile="+filepath.Join(c.dir, "tools-log4j2.properties"),
		class)
	cmd := exec.Command("java", append(jvm, args...)...)
	cmd.SysProcAttr = ownedProcess()
	return cmd
}

func shortName(class string) string { return class[strings.LastIndex(class, ".")+1:] }
