// sync/paho_packet_id.h: the MQTT packet identifier of a message Paho
// delivered (0 for QoS 0).
//
// Paho C++ 1.2 copies the C library's message, packet id included, but
// exposes that struct only to its own unit tests; paho_packet_id.cc is the
// one file that opens it. Ingest needs the id to recognise a redelivery
// (agent/ingest/redelivery_filter.h).
#ifndef EDGESYNC_SYNC_PAHO_PACKET_ID_H_
#define EDGESYNC_SYNC_PAHO_PACKET_ID_H_

#include <mqtt/message.h>

namespace edgesync {

int PahoPacketId(const mqtt::message& message);

}  // namespace edgesync

#endif  // EDGESYNC_SYNC_PAHO_PACKET_ID_H_
