// EPUBCheck for the test suite, one JVM for many books: starting EPUBCheck costs seconds (the
// JVM, then its schemas), checking a book once it runs costs a fraction of one.
//
// Reads EPUB paths from standard input, one per line. For each it prints the book's fatal
// errors, errors and warnings, one per line, then a line `END <count>`. It exits at the end of
// its input, so it ends with the test process that started it.
//
//   java -cp epubcheck.jar tests/support/EpubCheckLoop.java
import com.adobe.epubcheck.api.EPUBLocation;
import com.adobe.epubcheck.api.EpubCheck;
import com.adobe.epubcheck.api.MasterReport;
import com.adobe.epubcheck.messages.Message;
import com.adobe.epubcheck.messages.Severity;
import com.adobe.epubcheck.util.FeatureEnum;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

public class EpubCheckLoop {
  /** Keeps what `epubcheck --failonwarnings` would fail on. */
  static final class Problems extends MasterReport {
    final List<String> lines = new ArrayList<>();

    @Override
    public void message(Message message, EPUBLocation location, Object... args) {
      Severity severity = message.getSeverity();
      if (severity == Severity.WARNING || severity == Severity.ERROR || severity == Severity.FATAL) {
        String text = message.getMessage(args).replace('\n', ' ');
        lines.add(severity + "(" + message.getID() + "): " + location + ": " + text);
      }
    }

    @Override
    public void info(String resource, FeatureEnum feature, String value) {}

    @Override
    public int generate() {
      return 0;
    }

    @Override
    public void initialize() {}
  }

  public static void main(String[] args) throws Exception {
    // EPUBCheck may print on its own; only this loop's lines go to the real standard output.
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    System.setOut(System.err);
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String path; (path = in.readLine()) != null; ) {
      Problems problems = new Problems();
      try {
        new EpubCheck(new File(path), problems).doValidate();
      } catch (RuntimeException e) {
        problems.lines.add("FATAL(crash): " + e);
      }
      for (String line : problems.lines) {
        out.println(line);
      }
      out.println("END " + problems.lines.size());
    }
  }
}
