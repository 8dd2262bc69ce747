// What Kafka 3.9's snappy makes of some inputs: stdin holds frames (int32 length, bytes), stdout gets one frame per
// input, compressed either raw by snappy-java (`raw`: Snappy.compress, snappy 1.1.10) or as Kafka's own producer and
// broker compress a records section (`kafka`: Compression.snappy() wrapping, i.e. xerial SnappyOutputStream).
// Run as a single-file program on the oracle's classpath (scripts/snappy-java-digests does):
//   java -cp "$(scripts/real-kafka classpath)" tests/oracle/SnappyCompress.java raw|kafka < frames > frames
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.kafka.common.utils.ByteBufferOutputStream;
import org.xerial.snappy.Snappy;

public class SnappyCompress {
    public static void main(String[] args) throws Exception {
        boolean kafka = args.length > 0 && args[0].equals("kafka");
        DataInputStream in = new DataInputStream(new BufferedInputStream(System.in));
        DataOutputStream out = new DataOutputStream(new BufferedOutputStream(System.out));
        while (true) {
            int length;
            try {
                length = in.readInt();
            } catch (EOFException end) {
                break;
            }
            byte[] input = new byte[length];
            in.readFully(input);
            byte[] output = kafka ? kafkaCompress(input) : Snappy.compress(input);
            out.writeInt(output.length);
            out.write(output);
        }
        out.flush();
    }

    private static byte[] kafkaCompress(byte[] input) throws Exception {
        ByteBufferOutputStream buffer = new ByteBufferOutputStream(64);
        try (OutputStream stream = Compression.snappy().build().wrapForOutput(buffer, RecordBatch.MAGIC_VALUE_V2)) {
            stream.write(input);
        }
        ByteBuffer written = buffer.buffer();
        written.flip();
        byte[] bytes = new byte[written.remaining()];
        written.get(bytes);
        return bytes;
    }
}
