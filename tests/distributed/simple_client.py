# The seeds' simple_client.py (../shared/seeds/003), verbatim but for the import; run by test_training.py:
#     simple_client.py grpc://host:port [init]
import adplace as tf
import sys
x = tf.Variable(0.0, name="x")
increment_x = tf.assign(x, x + 1)
with tf.Session(sys.argv[1]) as sess:
    if sys.argv[2:] == ["init"]:
        sess.run(x.initializer)
    sess.run(increment_x)
    print(x.eval())
