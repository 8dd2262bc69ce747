package kafkashim.oracle;

import java.util.Collection;
import java.util.Map;
import java.util.TreeMap;

/**
 * The JSON lines the probes print on stdout (one object per line, keys sorted), read back by the Python tests. Written
 * by hand so that a probe needs no JSON library beyond what the Kafka jars bring.
 */
final class JsonLines {
    private JsonLines() {
    }

    /** Prints the object as one line; synchronized so that lines of several threads never interleave. */
    static synchronized void emit(Map<String, ?> object) {
        StringBuilder b = new StringBuilder();
        write(b, new TreeMap<>(object));
        System.out.println(b);
        System.out.flush();
    }

    static void write(StringBuilder b, Object v) {
        if (v == null) {
            b.append("null");
        } else if (v instanceof Map) {
            b.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                if (!first) b.append(',');
                first = false;
                write(b, String.valueOf(e.getKey()));
                b.append(':');
                write(b, e.getValue());
            }
            b.append('}');
        } else if (v instanceof Collection) {
            b.append('[');
            boolean first = true;
            for (Object o : (Collection<?>) v) {
                if (!first) b.append(',');
                first = false;
                write(b, o);
            }
            b.append(']');
        } else if (v instanceof Number || v instanceof Boolean) {
            b.append(v);
        } else {
            b.append('"');
            for (char ch : v.toString().toCharArray()) {
                if (ch == '"' || ch == '\\') b.append('\\').append(ch);
                else if (ch < 0x20) b.append(String.format("\\u%04x", (int) ch));
                else b.append(ch);
            }
            b.append('"');
        }
    }
}
