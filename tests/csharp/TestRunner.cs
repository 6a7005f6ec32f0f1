// SPDX-License-Identifier: Apache-2.0
// A small test runner (the project takes no NUnit from the network): each
// fixture is a class of this assembly with [Test] methods, run one by one
// in a fresh instance, disposed after the test when the fixture is
// IDisposable (NUnit's [TearDown]); `mono CmrTests.exe Fixture` runs one
// fixture, and fails when it has no tests (a typo in a ctest name must not
// pass).
using System;
using System.Linq;
using System.Reflection;

[AttributeUsage(AttributeTargets.Method)]
internal sealed class TestAttribute : Attribute
{
}

internal static class TestRunner
{
    private static int Main(string[] args)
    {
        if (args.Length != 1)
        {
            Console.Error.WriteLine("usage: mono CmrTests.exe FIXTURE");
            return 2;
        }
        Type fixture = Assembly.GetExecutingAssembly().GetType(args[0]);
        if (fixture == null)
        {
            Console.Error.WriteLine("no fixture class {0}", args[0]);
            return 2;
        }
        var tests = fixture.GetMethods(BindingFlags.Instance | BindingFlags.Public | BindingFlags.NonPublic)
                           .Where(m => m.GetCustomAttributes(typeof(TestAttribute), false).Length > 0)
                           .OrderBy(m => m.Name).ToList();
        if (tests.Count == 0)
        {
            Console.Error.WriteLine("fixture {0} has no [Test] methods", args[0]);
            return 2;
        }
        int failures = 0;
        foreach (MethodInfo test in tests)
        {
            try
            {
                Run(fixture, test);
                Console.WriteLine("ok   {0}.{1}", fixture.Name, test.Name);
            }
            catch (TargetInvocationException e)
            {
                failures++;
                Console.WriteLine("FAIL {0}.{1}: {2}", fixture.Name, test.Name, e.InnerException);
            }
            catch (Exception e) // from the fixture's Dispose
            {
                failures++;
                Console.WriteLine("FAIL {0}.{1}: {2}", fixture.Name, test.Name, e);
            }
        }
        // Finalizers run now, so that one that crashes (a release of
        // something already gone) fails this fixture, not passes unseen.
        Finalizers.Run();
        Console.WriteLine("{0}: {1} tests, {2} failed", fixture.Name, tests.Count, failures);
        return failures == 0 ? 0 : 1;
    }

    // Runs `test` in a new instance of `fixture`, then disposes the instance
    // if it is IDisposable, whether the test passed or not.
    private static void Run(Type fixture, MethodInfo test)
    {
        object instance = Activator.CreateInstance(fixture, true);
        try
        {
            test.Invoke(instance, null);
        }
        finally
        {
            var disposable = instance as IDisposable;
            if (disposable != null) disposable.Dispose();
        }
    }
}
