package wirebytes

import "strconv"

// apiNames are the names of the Kafka APIs a monitoring client sends, as
// Kafka's protocol spells them (the share-group client's franz-go names
// its own the same way).
var apiNames = map[int16]string{
	0:  "Produce",
	1:  "Fetch",
	2:  "ListOffsets",
	3:  "Metadata",
	8:  "OffsetCommit",
	9:  "OffsetFetch",
	10: "FindCoordinator",
	11: "JoinGroup",
	12: "Heartbeat",
	13: "LeaveGroup",
	14: "SyncGroup",
	15: "DescribeGroups",
	16: "ListGroups",
	17: "SASLHandshake",
	18: "ApiVersions",
	19: "CreateTopics",
	21: "DeleteRecords",
	22: "InitProducerID",
	32: "DescribeConfigs",
	35: "DescribeLogDirs",
	36: "SASLAuthenticate",
	60: "DescribeCluster",
	61: "DescribeProducers",
	65: "DescribeTransactions",
	66: "ListTransactions",
	68: "ConsumerGroupHeartbeat",
	69: "ConsumerGroupDescribe",
	75: "DescribeTopicPartitions",
}

// APIName is the name of the Kafka API with the key; ApiKey<key> for one
// a monitoring client does not send.
func APIName(key int16) string {
	if name, ok := apiNames[key]; ok {
		return name
	}
	return "ApiKey" + strconv.Itoa(int(key))
}
