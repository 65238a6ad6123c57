module example.com/agentd-restart-driver

go 1.26.0

require github.com/agentd-dev/agentd/clients/go v0.1.0

require github.com/agentd-dev/agentd/gen/go v0.1.0 // indirect

require (
	connectrpc.com/connect v1.21.1 // indirect
	github.com/evanphx/json-patch/v5 v5.9.11 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/grpc v1.85.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

// This checkout's client.
replace github.com/agentd-dev/agentd/clients/go => ../../../clients/go

replace github.com/agentd-dev/agentd/gen/go => ../../../gen/go
