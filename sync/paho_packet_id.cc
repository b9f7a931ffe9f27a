// The only file that sees mqtt::message's C struct (see the header). The
// switch adds one inline accessor and nothing else: the class's layout and
// every other member are the same in each file that includes it. Nothing
// else may come before this include, so the switch reaches only it.
#define UNIT_TESTS 1
#include <mqtt/message.h>
#undef UNIT_TESTS

#include "sync/paho_packet_id.h"

namespace edgesync {

int PahoPacketId(const mqtt::message& message) { return message.c_struct().msgid; }

}  // namespace edgesync
